package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/ref"
)

// errBlocked means a call's references do not resolve yet.
var errBlocked = errors.New("agent: call is blocked on a reference")

// blocked wraps errBlocked and the reference error that says what is
// missing. It is fmt.Errorf("%w: %w", errBlocked, err) but for its text,
// made only when asked: a chain of calls blocks often, and the text is
// rarely read.
type blocked struct{ errs [2]error } // errBlocked and the reference error

func newBlocked(err error) *blocked { return &blocked{[2]error{errBlocked, err}} }

func (b *blocked) Error() string   { return errBlocked.Error() + ": " + b.errs[1].Error() }
func (b *blocked) Unwrap() []error { return b.errs[:] } // no allocation: errors.Is asks often

// executor runs calls against a log.
type executor struct {
	cfg   *Config // shared: never written
	reg   *Registry
	build *Build
	calls *callSlab // where the usual streamed call is made, in a quiet run
}

// prepareCall parses raw, finds its tool, resolves its references against
// log and validates the result. A call whose references are not there yet
// returns an error wrapping errBlocked and the missing reference.
func (x *executor) prepareCall(log *message.Log, raw json.RawMessage) (*Call, error) {
	return x.prepareRaw(log, raw, false)
}

// prepareRaw is prepareCall; with object, raw is known to be valid JSON,
// as a streamed call is (see parseCall).
func (x *executor) prepareRaw(log *message.Log, raw json.RawMessage, object bool) (*Call, error) {
	if object {
		if c := x.prepareChecked(raw); c != nil {
			return c, nil
		}
	}
	c, err := parseCallIn(x.calls, raw, object)
	if err != nil {
		return nil, err
	}
	if c.shape = x.build.shape(c.Tool); c.shape == nil {
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("%w %q (tools: %v)", ErrUnknownTool, c.Tool, x.build.Tools())}
	}
	c.Schema = c.shape.def
	meta := message.CallMeta{Tool: c.Tool, Instance: c.Instance, OutputPath: c.OutputPath, OutputMethod: c.OutputMethod}
	out, err := message.ParseOutputIn(meta, c.outStore)
	if err != nil {
		if _, err := ref.Parse(c.OutputPath); err != nil {
			return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("_outputPath: %w", err)}
		}
		_, err := ref.ParseMethod(c.OutputMethod)
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("_outputMethod: %w", err)}
	}
	c.output = out
	return x.prepare(log, c, true) // ParseCallMeta found a valid object
}

// prepareChecked prepares the usual streamed call in one pass over it:
// its tool named first, no reference among its parameters, and its tool's
// check schema met, which the schema's fast path checks while it hands
// over the meta-properties. It returns nil for any other call, which
// prepareRaw then prepares step by step, and which reports what is wrong.
func (x *executor) prepareChecked(raw json.RawMessage) *Call {
	tool := leadingTool(raw)
	if tool == "" {
		return nil
	}
	sh := x.build.shape(tool)
	if sh == nil || sh.scoped {
		return nil
	}
	compiled, err := sh.compiledCheck(x.reg)
	if err != nil {
		return nil
	}
	var m message.CallMeta
	other := false // a member that needs the step-by-step way
	// A parameter with a dagger or an escape (which may hide one) may hold
	// a reference, and a meta-property other than the output path is taken
	// as it is only without either: such a call goes the step-by-step way.
	// A key with an escape fails AcceptsObject.
	ok := compiled.AcceptsObject(raw, func(k, v []byte) {
		if len(k) == 0 || k[0] != '_' {
			other = other || bytes.IndexByte(v, '\\') >= 0 || bytes.Contains(v, []byte(ref.Dagger)) ||
				bytes.Contains(k, []byte(ref.Dagger))
			return
		}
		dst := m.Field(k)
		if dst == nil {
			other = other || string(k) == "_scopes" || bytes.IndexByte(v, '\\') >= 0 || bytes.Contains(v, []byte(ref.Dagger))
			return
		}
		if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 ||
			&m.OutputPath != dst && bytes.Contains(v, []byte(ref.Dagger)) {
			other = true
			return
		}
		// The call's bytes never change (see parseCall): share them.
		*dst = unsafe.String(unsafe.SliceData(v[1:]), len(v)-2)
	})
	if !ok || other || m.Tool != tool {
		return nil
	}
	// newCall's Call is zero: set its fields one by one, not as one
	// struct, whose copy shades all its pointers while the collector marks.
	c := newCall(x.calls)
	c.Raw, c.Params, c.valid, c.noRefs = raw, raw, raw, true
	c.Tool, c.Instance, c.OutputPath, c.OutputMethod = m.Tool, m.Instance, m.OutputPath, m.OutputMethod
	c.shape, c.Schema = sh, sh.def
	out, err := message.ParseOutputIn(m, c.outStore)
	if err != nil {
		return nil
	}
	c.output = out
	return c
}

// leadingTool returns the _tool of a call that names it first, as models
// do, without escapes; "" for any other call.
func leadingTool(raw json.RawMessage) string {
	const lead = `{"_tool":"`
	if !bytes.HasPrefix(raw, []byte(lead)) {
		return ""
	}
	for i := len(lead); i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			return unsafe.String(unsafe.SliceData(raw[len(lead):]), i-len(lead))
		case c == '\\' || c < 0x20:
			return ""
		}
	}
	return ""
}

// preparePlanned is prepareCall for a call of an analysed plan: its
// meta-properties are meta and its output out (for the call's template
// when it is instanced), already parsed and checked.
func (x *executor) preparePlanned(log *message.Log, raw json.RawMessage, meta *message.CallMeta, out *message.Output) (*Call, error) {
	c := &Call{Raw: raw, Tool: meta.Tool, Instance: meta.Instance, OutputPath: meta.OutputPath, OutputMethod: meta.OutputMethod}
	if c.shape = x.build.shape(c.Tool); c.shape == nil {
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("%w %q (tools: %v)", ErrUnknownTool, c.Tool, x.build.Tools())}
	}
	c.Schema = c.shape.def
	c.output = out
	return x.prepare(log, c, true)
}

// prepare resolves and validates c, whose meta-properties, tool and output
// are set. object says that c.Raw is known to be a valid JSON object.
func (x *executor) prepare(log *message.Log, c *Call, object bool) (*Call, error) {
	raw := c.Raw
	var src ref.Source = log
	if c.Instance != "" {
		src = log.Instance(c.Instance)
	}
	scopes, scoped, err := c.shape.scopes, c.shape.scoped, error(nil)
	if !scoped {
		scopes, scoped, err = callScopes(nil, raw)
	}
	if err != nil {
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: err}
	}
	if scoped {
		// A scoped call sees its scopes and nothing else: its references
		// resolve against them too.
		c.scoped, err = scopedContext(log, c.Instance, scopes)
		if errors.Is(err, ref.ErrNotFound) {
			return nil, newBlocked(err)
		}
		if err != nil {
			return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: err}
		}
		view, err := message.NewLog(c.scoped...)
		if err != nil {
			return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: err}
		}
		src = view
		if c.Instance != "" {
			src = view.Instance(c.Instance)
		}
	}
	substitute := ref.Substitute
	if object {
		substitute = ref.SubstituteObject
	}
	params := raw
	if !c.noRefs {
		params, err = substitute(src, raw)
	}
	if err != nil {
		if errors.Is(err, ref.ErrNotFound) {
			return c, newBlocked(err) // c, parsed, can be tried again
		}
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: err}
	}
	c.Params, c.valid = params, params
	compiled, err := c.shape.compiledCheck(x.reg)
	if err != nil {
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("tool schema: %w", err)}
	}
	if err := compiled.Validate(params); err != nil {
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("params: %w", err)}
	}
	return c, nil
}

// runCall executes a prepared call and returns the messages it appends:
// output messages, or an error message when it failed.
func (x *executor) runCall(ctx context.Context, c *Call) ([]message.Message, *Response, error) {
	res, resp, err := x.invoke(ctx, c)
	return x.record(ctx, c, res, resp, err)
}

// record returns the messages that record what invoke returned for c.
func (x *executor) record(ctx context.Context, c *Call, res *Result, resp *Response, err error) ([]message.Message, *Response, error) {
	now := platform.Now(ctx)
	if err != nil {
		// A branching output path takes the error to its last branch.
		val, _ := json.Marshal(map[string]string{"error": err.Error()})
		if msgs, werr := c.outputs(val, message.Failure, now); werr == nil && len(msgs) > 0 {
			return msgs, resp, err
		}
		return nil, resp, err
	}
	if res.Messages != nil {
		return res.Messages, resp, nil
	}
	if res.Value == nil {
		res.Value = json.RawMessage("null")
	}
	msgs, err := c.outputs(res.Value, res.Branch, now)
	if err != nil {
		return nil, resp, &CallError{Kind: Runtime, Tool: c.Tool, Err: err}
	}
	return msgs, resp, nil
}

// invoke runs the activity, or produces the result latently (104).
func (x *executor) invoke(ctx context.Context, c *Call) (res *Result, resp *Response, err error) {
	return x.invokeLending(ctx, c, false)
}

// invokeLending is invoke; with lend, a bound function may lend its
// Result, which the caller then gives back (see Result.lent).
func (x *executor) invokeLending(ctx context.Context, c *Call, lend bool) (res *Result, resp *Response, err error) {
	if name := c.delegate(); name != "" {
		return x.delegate(ctx, c, name)
	}
	a, err := c.activity, error(nil)
	if !c.resolved {
		a, _, err = c.resolveActivity(x.reg)
	}
	if err != nil {
		return nil, nil, &CallError{Kind: Structural, Tool: c.Tool, Err: err}
	}
	if a != nil {
		defer func() {
			if p := recover(); p != nil {
				// The model sees the panic value; the stack goes to the log
				// only, since it differs from run to run.
				logger(*x.cfg).ErrorContext(ctx, "activity panicked", "tool", c.Tool, "panic", p, "stack", string(debug.Stack()))
				err = &CallError{Kind: Runtime, Tool: c.Tool, Err: fmt.Errorf("panic: %v", p)}
			}
		}()
		if b, ok := a.(*bound); ok {
			res, err = b.run(ctx, c, lend)
		} else {
			res, err = a.Run(ctx, c)
		}
		if err != nil {
			var ce *CallError
			if !errors.As(err, &ce) {
				err = &CallError{Kind: Runtime, Tool: c.Tool, Err: err}
			} else if ce.Tool == "" {
				ce.Tool = c.Tool
			}
			return nil, nil, err
		}
		if res == nil {
			res = &Result{}
		}
		if err := x.checkResult(c, res); err != nil {
			return nil, nil, err
		}
		return res, nil, nil
	}
	return x.latent(ctx, c)
}

// checkResult validates the value an activity returned against the
// tool's _output, when it declares one. _output describes success: a
// result the activity sent down another branch, or messages it appends
// itself, are its own business.
func (x *executor) checkResult(c *Call, res *Result) error {
	sh := c.shape
	if sh == nil || res.Value == nil || res.Messages != nil || res.Branch != message.Success ||
		res.enc != nil && sh.resultImplied(res.enc) {
		return nil
	}
	compiled, err := sh.compiledResult(x.reg)
	if err == nil && compiled != nil {
		err = compiled.Validate(res.Value)
	}
	if err != nil {
		return &CallError{Kind: Runtime, Tool: c.Tool, Err: fmt.Errorf("result does not match the tool's _output: %w", err)}
	}
	return nil
}

// latent produces a call's result with the model: the value the model
// already wrote in the call's _output (eager), or a Request whose schema
// is the tool's _output.
func (x *executor) latent(ctx context.Context, c *Call) (*Result, *Response, error) {
	var inline struct {
		Output json.RawMessage `json:"_output"`
	}
	_ = json.Unmarshal(c.Params, &inline)
	if inline.Output != nil {
		return &Result{Value: inline.Output}, nil, nil
	}
	var def struct {
		Description string `json:"description"`
		Properties  struct {
			Output json.RawMessage `json:"_output"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(c.Schema, &def)
	out := def.Properties.Output
	if out == nil {
		out = json.RawMessage(`{}`)
	}
	task := "Carry out the tool " + c.Tool + " for the input below and give its result as output."
	if def.Description != "" {
		task += "\nThe tool: " + def.Description
	}
	ctxMsgs := []message.Message{{Type: message.TypeText, Role: message.RoleSystem, Text: task}}
	if len(c.scoped) > 0 {
		// Scopes focus a latent call (015): the scoped data comes first,
		// marked as what to attend to.
		ctxMsgs = append(ctxMsgs, message.Text("Focus on the data below; it is what this call is about."))
		ctxMsgs = append(ctxMsgs, c.scoped...)
	}
	ctxMsgs = append(ctxMsgs, message.Message{Type: message.TypeData, Kind: message.KindInput, Data: c.Args()})
	cfg := *x.cfg
	cfg.CallbackPath, cfg.N = "", 1
	resp, err := Request(ctx, cfg, out, ctxMsgs)
	if err != nil {
		return nil, resp, &CallError{Kind: Runtime, Tool: c.Tool, Err: fmt.Errorf("latent execution: %w", err)}
	}
	sol := resp.Solutions[0]
	if sol.Output == nil {
		return nil, resp, &CallError{Kind: Runtime, Tool: c.Tool, Err: errors.New("latent execution gave no output")}
	}
	return &Result{Value: sol.Output}, resp, nil
}
