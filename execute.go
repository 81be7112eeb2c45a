package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/ref"
)

// errBlocked means a call's references do not resolve yet.
var errBlocked = errors.New("agent: call is blocked on a reference")

// blocked is a call's reference error, which says what is missing,
// marked with errBlocked.
func blocked(err error) error { return fmt.Errorf("%w: %w", errBlocked, err) }

// missing returns the reference error a blocked error holds.
func missing(err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok && errors.Is(err, errBlocked) {
		return j.Unwrap()[1]
	}
	return err
}

// unknownInstance is the error of a call whose _instance names no
// instance of the log's data. It lists them only when it is read: a
// blocked call is tried again as calls finish.
type unknownInstance struct {
	id  string
	log *message.Log
}

func (e unknownInstance) Error() string {
	return fmt.Sprintf("_instance %q names no instance of the data (%s)", e.id, strings.Join(e.log.Instances(), ", "))
}

// executor runs calls against a log.
type executor struct {
	cfg   *Config // shared: never written
	reg   *Registry
	build *Build
	// council holds the opinions of the step's advisors (017), set on the
	// run's goroutine before the step's calls start.
	council []Opinion
}

// prepareCall parses raw, finds its tool, resolves its references against
// log and validates the result. A call whose references are not there yet
// returns an error wrapping errBlocked and the missing reference, with
// the call as parsed.
func (x *executor) prepareCall(log *message.Log, raw json.RawMessage) (*Call, error) {
	c, err := parseCall(raw)
	if err != nil {
		return nil, err
	}
	meta := message.CallMeta{Tool: c.Tool, Instance: c.Instance, OutputPath: c.OutputPath, OutputMethod: c.OutputMethod}
	out, err := message.ParseOutput(meta)
	if err != nil {
		if _, err := ref.Parse(c.OutputPath); err != nil {
			return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("_outputPath: %w", err)}
		}
		_, err := ref.ParseMethod(c.OutputMethod)
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("_outputMethod: %w", err)}
	}
	return x.preparePlanned(log, raw, &meta, out)
}

// preparePlanned is prepareCall for a call whose meta-properties and
// output are parsed already (a plan parses them once).
func (x *executor) preparePlanned(log *message.Log, raw json.RawMessage, meta *message.CallMeta, out *message.Output) (*Call, error) {
	c := &Call{Raw: raw, Tool: meta.Tool, Instance: meta.Instance, OutputPath: meta.OutputPath, OutputMethod: meta.OutputMethod}
	if c.shape = x.build.shape(c.Tool); c.shape == nil {
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("%w %q (tools: %v)", ErrUnknownTool, c.Tool, x.build.Tools())}
	}
	c.Schema = c.shape.def
	c.output = out
	return x.prepare(log, c)
}

// prepare resolves and validates c, whose meta-properties, tool and output
// are set.
func (x *executor) prepare(log *message.Log, c *Call) (*Call, error) {
	raw := c.Raw
	var src ref.Source = log
	if c.Instance != "" {
		src = log.Instance(c.Instance)
		// Where a loop offers _instance (its data has instances), a call
		// names one of them, as the enum it was offered says, or as the
		// string it was offered once instances came mid-run says (the
		// check the enum did). It waits, as for a reference: another call
		// of its step may bring that instance.
		if x.build.contextLen > 0 && len(x.build.instances) > 0 && !c.shape.ownInstance && !log.HasInstance(c.Instance) {
			return c, blocked(unknownInstance{c.Instance, log})
		}
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
		var set scopeSet
		c.scoped, set, err = scopedContext(log, c.Instance, scopes)
		if errors.Is(err, ref.ErrNotFound) {
			return c, blocked(err)
		}
		if err != nil {
			return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: err}
		}
		if src, err = scopeSource(src, c.Instance, set, c.scoped); err != nil {
			return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: err}
		}
	}
	params, err := ref.Substitute(src, raw)
	if err != nil {
		if errors.Is(err, ref.ErrNotFound) {
			return c, blocked(err) // c, parsed, can be tried again
		}
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: err}
	}
	c.Params = params
	compiled, err := c.shape.compiledCheck(x.reg)
	if err != nil {
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("tool schema: %w", err)}
	}
	// A strict model writes null for a parameter it leaves out; the
	// activity gets the parameters as the tool's schema says them.
	if c.Params, err = compiled.Accept(params); err != nil {
		return nil, &CallError{Kind: Structural, Tool: c.Tool, Err: fmt.Errorf("params: %w", err)}
	}
	return c, nil
}

// asWritten returns the call raw, as a model wrote it, without the nulls
// a strict model writes for the properties it leaves out (see
// schema.Schema.DropAbsent): the step's plan, which every later request
// shows the model, and the call handed to events and activities then say
// only what the model chose.
func (x *executor) asWritten(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte("null")) {
		return raw
	}
	offered := x.build.offeredCall(planTool(raw))
	return withoutMetaNulls(offered, x.dropAbsent(offered, raw))
}

// withoutMetaNulls returns the call raw without a null written for a
// meta-property its tool's offered schema does not have: _scopes of a
// tool without scopes, _instance in a context without instances. A model
// outside strict mode writes one for none, as strict models do for the
// ones offered; dropAbsent keeps it, since nothing refuses it.
func withoutMetaNulls(offered, raw json.RawMessage) json.RawMessage {
	if offered == nil || !bytes.Contains(raw, []byte("null")) {
		return raw
	}
	o, err := ojson.Parse(raw)
	if err != nil {
		return raw
	}
	n := len(o.Keys)
	for _, k := range [...]string{"_scopes", "_instance"} {
		if string(o.Get(k)) == "null" && !declares(offered, k) {
			o.Delete(k)
		}
	}
	if len(o.Keys) == n {
		return raw
	}
	return o.Bytes()
}

// asWrittenAdvice is asWritten for the advisors' opinions.
func (x *executor) asWrittenAdvice(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte("null")) {
		return raw
	}
	return x.dropAbsent(withDefs(x.build.advice, x.build.adviceDefs), raw)
}

// dropAbsent returns raw without the nulls that stand for properties
// left out, by the schema offered for it (raw as it is when none).
func (x *executor) dropAbsent(offered, raw json.RawMessage) json.RawMessage {
	if offered == nil {
		return raw // an unknown tool: its error says so
	}
	compiled, err := x.reg.compile(offered)
	if err != nil {
		return raw
	}
	return compiled.DropAbsent(raw)
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
		return failureOutputs(c, err, now), resp, err
	}
	if res.Messages != nil {
		// A preset message is expanded, as in a context (the next request
		// would refuse it otherwise).
		msgs, err := x.expanded(res.Messages)
		if err != nil {
			cerr := &CallError{Kind: Runtime, Tool: c.Tool, Err: err}
			return failureOutputs(c, cerr, now), resp, cerr
		}
		return msgs, resp, nil
	}
	// An empty Value is no value, as nil is (an empty buffer or body
	// gives one). The Result is the activity's, which may share it
	// between calls, so it is not written to.
	value := res.Value
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	msgs, err := c.outputs(value, res.Branch, now)
	if err != nil {
		return nil, resp, &CallError{Kind: Runtime, Tool: c.Tool, Err: err}
	}
	return msgs, resp, nil
}

// failureOutputs returns the messages that take err to the last branch
// of c's output path, when it branches, dated date.
func failureOutputs(c *Call, err error, date time.Time) []message.Message {
	val, _ := json.Marshal(map[string]string{"error": err.Error()})
	msgs, werr := c.outputs(val, message.Failure, date)
	if werr != nil || len(msgs) == 0 {
		return nil
	}
	return msgs
}

// invoke runs the activity, or produces the result latently (104).
func (x *executor) invoke(ctx context.Context, c *Call) (res *Result, resp *Response, err error) {
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
		res, err = a.Run(ctx, c.handed())
		if err != nil {
			err = readable(err)
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

// readable returns err, or an error that says why not when its Error
// method panics, as a nil *T returned as an error does: its text is read
// later, where no recover would keep the panic from ending the program.
func readable(err error) (out error) {
	defer func() {
		if p := recover(); p != nil {
			out = fmt.Errorf("the activity returned an error, a %T, whose Error method panicked: %v", err, p)
		}
	}()
	_ = err.Error()
	return err
}

// checkResult validates the value an activity returned against the
// tool's _output, when it declares one. _output describes success: a
// result the activity sent down another branch, or messages it appends
// itself, are its own business.
func (x *executor) checkResult(c *Call, res *Result) error {
	sh := c.shape
	if sh == nil || len(res.Value) == 0 || res.Messages != nil || res.Branch != message.Success {
		return nil
	}
	compiled, err := sh.compiledResult(x.reg)
	if err != nil { // the schema is at fault, not the result
		return &CallError{Kind: Runtime, Tool: c.Tool, Err: fmt.Errorf("the tool's _output: %w", err)}
	}
	if compiled == nil {
		return nil
	}
	if err := compiled.Validate(res.Value); err != nil {
		// The result is not written, but said: what the code computed
		// (a charge made) is not lost, as for a write that does not
		// combine.
		return &CallError{Kind: Runtime, Tool: c.Tool, Err: fmt.Errorf("result does not match the tool's _output: %w; the result: %s", err, compact(res.Value))}
	}
	return nil
}

// expanded returns msgs, an activity's messages, with their presets
// expanded, or an error for the first that no request could render: one
// of a type without a handler, a tool or advisor message naming one the
// registry lacks, an inline tool that does not compile, an unknown
// preset. Appended, it would fail every later request of the run, and
// every resume of it; the call fails instead, as for a write that does
// not combine. The error counts the messages as the activity returned
// them.
func (x *executor) expanded(msgs []message.Message) ([]message.Message, error) {
	out, err := ExpandPresets(x.reg, nil, msgs)
	if err != nil {
		return nil, errorf("its messages were not written: %w", err)
	}
	for i := range msgs {
		one := msgs[i : i+1]
		if msgs[i].Type == message.TypePreset {
			// The preset message stays, marked expanded, before its own.
			one, _ = ExpandPresets(x.reg, nil, one) // as it did above
		}
		for j := range one {
			if err := x.reg.renderable(&one[j]); err != nil {
				from := ""
				if j > 0 {
					from = fmt.Sprintf(", its message %d (%s)", j-1, one[j].Type)
				}
				return nil, errorf("its messages were not written: message %d (%s)%s: %w", i, msgs[i].Type, from, err)
			}
		}
	}
	return out, nil
}
