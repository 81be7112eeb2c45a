package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/schema"
)

// Delegation limits and errors (014).
const (
	// DefaultMaxDepth bounds nested delegates when Config.MaxDepth is 0.
	DefaultMaxDepth = 3
	// Anonymous as a tool's _delegate runs the call in a fresh, isolated
	// request with no saved Idea behind it.
	Anonymous = "anonymous"
)

// ErrDepth reports delegates nested deeper than the limit.
var ErrDepth = errors.New("agent: delegation too deep")

type depthKey struct{}

// Idea registers a saved Idea under name, for tools whose _delegate names
// it. The registry keeps a copy: changing idea afterwards changes nothing.
func (r *Registry) Idea(name string, idea *Idea) {
	if name == "" || idea == nil || name == Anonymous {
		panic(fmt.Sprintf("agent: invalid Idea registration %q", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ideas == nil {
		r.ideas = map[string]*Idea{}
	}
	if _, ok := r.ideas[name]; ok {
		panic(fmt.Sprintf("agent: idea %q is already registered", name))
	}
	r.ideas[name] = idea.Clone() // the caller's to change after
}

// lookupIdea finds a delegate's Idea: registered by name, else a file in
// fsys (Config.Ideas).
func (r *Registry) lookupIdea(name string, fsys fs.FS) (*Idea, error) {
	r.mu.RLock()
	idea, ok := r.ideas[name]
	r.mu.RUnlock()
	if ok {
		return idea, nil
	}
	if fsys == nil {
		return nil, fmt.Errorf("delegate %q: no such Idea registered, and Config.Ideas is not set", name)
	}
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, errorf("delegate %q: %w", name, err)
	}
	idea, err = ParseIdea(data)
	if err != nil {
		return nil, errorf("delegate %q: %w", name, err)
	}
	return idea, nil
}

// delegateOf returns a tool's _delegate, or "".
func delegateOf(def json.RawMessage) string {
	if !bytes.Contains(def, []byte(`_delegate`)) && bytes.IndexByte(def, '\\') < 0 {
		return "" // most definitions have none: skip the decode
	}
	var d struct {
		Delegate string `json:"_delegate"`
	}
	_ = json.Unmarshal(def, &d)
	return d.Delegate
}

// delegate runs a call in an isolated sub-run (014): the Idea's context,
// then what the call's scopes import from the parent, then the call's
// parameters as an input message (with the Idea's input schema, so the
// model maps them; none for no parameters and no input schema), and
// nothing else. Its output is the call's result;
// its usage rolls up to the parent.
func (x *executor) delegate(ctx context.Context, c *Call, name string) (*Result, *Response, error) {
	depth, _ := ctx.Value(depthKey{}).(int)
	limit := x.cfg.MaxDepth
	if limit <= 0 {
		limit = DefaultMaxDepth
	}
	if depth >= limit {
		return nil, nil, &CallError{Kind: Runtime, Tool: c.Tool, Err: fmt.Errorf("%w: %d levels", ErrDepth, limit)}
	}
	var idea *Idea
	if name == Anonymous {
		description, out := c.toolResult()
		idea = &Idea{Schema: out}
		if description != "" {
			idea.Context = []message.Message{{Type: message.TypeText, Role: message.RoleSystem, Text: description}}
		}
	} else {
		var err error
		if idea, err = x.reg.lookupIdea(name, x.cfg.Ideas); err != nil {
			return nil, nil, &CallError{Kind: Runtime, Tool: c.Tool, Err: err}
		}
	}
	// The Idea's own presets come before the registry's, as when it runs
	// on its own; the sub-run leaves an expanded context as it is.
	ideaContext, err := ExpandPresets(x.reg, idea.Presets, idea.Context)
	if err != nil {
		return nil, nil, &CallError{Kind: Runtime, Tool: c.Tool, Err: errorf("delegate %q: %w", name, err)}
	}
	var msgs []message.Message
	var inputSchema json.RawMessage
	for _, m := range ideaContext {
		// An input message with a schema and no data is the Idea's input
		// declaration (103): the call's parameters fill it.
		if m.Type == message.TypeData && m.Kind == message.KindInput && m.Data == nil && m.Schema != nil {
			inputSchema = m.Schema
			continue
		}
		msgs = append(msgs, m)
	}
	scoped, err := uninstanced(c)
	if err != nil {
		return nil, nil, &CallError{Kind: Runtime, Tool: c.Tool, Err: errorf("delegate %q: scopes: %w", name, err)}
	}
	// The call's parameters come last (014, "Execution Flow"): what it
	// says itself wins over an input it scopes from the parent.
	msgs = append(msgs, scoped...)
	// A call with no parameters says nothing to the delegate (page 015's
	// sub-request has no input then), unless the Idea declares an input
	// the model should see is missing.
	if args := c.Args(); inputSchema != nil || !emptyObject(args) {
		msgs = append(msgs, message.Message{Type: message.TypeData, Kind: message.KindInput, Data: args, Schema: inputSchema})
	}
	cfg := *x.cfg
	cfg.CallbackPath, cfg.N = "", 1
	if cfg.CacheKey != "" {
		// The sub-run's requests share a prefix with each other, not
		// with the parent's.
		sub := name
		if name == Anonymous { // no Idea's name: its tool's
			sub = c.Tool
		}
		cfg.CacheKey += "/" + sub
	}
	// The sub-run is a run of the Idea: it shows data as the Idea says,
	// as it would running on its own.
	if idea.Rendering != "" {
		cfg.Rendering = idea.Rendering
	}
	// The sub-run is part of the call, which the parent's journal records
	// (started, settled); it is no run of the store on its own, and must
	// not take the parent's id, journal or lease.
	cfg.Store, cfg.RunID, cfg.resume = nil, "", nil
	schema := idea.Schema
	if schema == nil {
		schema = json.RawMessage(`{}`)
	}
	res, err := Run(context.WithValue(ctx, depthKey{}, depth+1), cfg, schema, msgs)
	resp := &Response{}
	if res != nil {
		resp.Usage = res.Usage
	}
	if err != nil {
		return nil, resp, &CallError{Kind: Runtime, Tool: c.Tool, Err: errorf("delegate %q: %w", name, err)}
	}
	return &Result{Value: res.Solution.Output}, resp, nil
}

// emptyObject reports whether raw is a JSON object with no members.
func emptyObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) >= 2 && raw[0] == '{' && raw[len(raw)-1] == '}' && len(bytes.TrimSpace(raw[1:len(raw)-1])) == 0
}

// ErrNotIdeator reports an Idea with no input declaration.
var ErrNotIdeator = errors.New("agent: the idea declares no input")

// Ideator registers an Idea whose context declares its input (an input
// message with a schema and no data: an Ideator, 103) as a tool named
// name: the tool's parameters are that input schema, its _output the
// Idea's schema, and calls run it as a delegate. This is the upfront
// resolution of page 014: the model sees the delegate's exact contract.
func (r *Registry) Ideator(name string, idea *Idea) error {
	if _, _, ok := ideaContract(idea); !ok {
		return fmt.Errorf("%w: %q", ErrNotIdeator, name)
	}
	def, err := ResolveDelegate([]byte(`{"type":"object","_delegate":`+string(ojson.Quote(name))+`}`), idea)
	if err != nil {
		return fmt.Errorf("ideator %q: %w", name, err)
	}
	r.Idea(name, idea)
	r.Tool(name, def)
	return nil
}

// ideaContract returns an Idea's input schema (its input message with a
// schema and no data) and its first system message.
func ideaContract(idea *Idea) (input json.RawMessage, description string, ok bool) {
	for _, m := range idea.Context {
		if m.Type == message.TypeData && m.Kind == message.KindInput && m.Data == nil && m.Schema != nil {
			input = m.Schema
		}
		if m.Type == message.TypeText && m.Role == message.RoleSystem && description == "" {
			description = m.Text
		}
	}
	return input, description, input != nil
}

// ResolveDelegate resolves a delegate tool upfront (014): it returns the
// tool's definition merged with its Idea's contract, so the model sees
// what the delegate needs and what it returns. The Idea's input
// properties join the tool's parameters (the tool's own win where both
// name one), the required lists are united, _output becomes the Idea's
// schema unless the tool declares one, and the Idea's first system
// message is the description unless the tool has one. _delegate stays:
// calls still run the Idea.
func ResolveDelegate(def json.RawMessage, idea *Idea) (json.RawMessage, error) {
	d, err := ojson.Parse(def)
	if err != nil {
		return nil, fmt.Errorf("tool definition: %w", err)
	}
	input, description, _ := ideaContract(idea)
	props, err := ojson.Parse(d.Get("properties"))
	if err != nil {
		props, _ = ojson.Parse([]byte(`{}`))
	}
	var required []string
	if rb := d.Get("required"); rb != nil {
		if err := json.Unmarshal(rb, &required); err != nil {
			return nil, fmt.Errorf("tool definition: required: %w", err)
		}
	}
	// The Idea's schemas come into the tool, where "#" is the tool's
	// root: their definitions join the tool's "$defs", named after where
	// they come from ("input.Who", "output.Result"), and their refs point
	// there.
	defs, err := ojson.Parse(d.Get("$defs"))
	if err != nil {
		defs, _ = ojson.Parse([]byte(`{}`))
	}
	embed := func(s json.RawMessage, name string) (json.RawMessage, []schema.Def, error) {
		taken := slices.Clone(defs.Keys)
		if old, err := ojson.Parse(d.Get("definitions")); err == nil {
			taken = append(taken, old.Keys...)
		}
		body, more, err := schema.Embed(s, name, taken)
		for _, def := range more {
			defs.Set(def.Name, def.Schema)
		}
		return body, more, err
	}
	if input != nil {
		body, more, err := embed(input, "input")
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		in, err := ojson.Parse(schema.Deref(body, more)) // a recursive input is a ref to itself
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		if why := notParameters(in); why != "" {
			return nil, fmt.Errorf("input schema: a tool's parameters are an object's properties, and this schema %s", why)
		}
		if ip, err := ojson.Parse(in.Get("properties")); err == nil {
			for i, k := range ip.Keys {
				if props.Get(k) == nil {
					props.Set(k, ip.Values[i])
				}
			}
		}
		var inReq []string
		if rb := in.Get("required"); rb != nil {
			if err := json.Unmarshal(rb, &inReq); err != nil {
				return nil, fmt.Errorf("input schema: required: %w", err)
			}
		}
		for _, k := range inReq {
			if !slices.Contains(required, k) {
				required = append(required, k)
			}
		}
	}
	if props.Get("_output") == nil {
		out := idea.Schema
		if out == nil {
			out = json.RawMessage(`{}`)
		}
		if out, _, err = embed(out, "output"); err != nil {
			return nil, fmt.Errorf("idea schema: %w", err)
		}
		props.Set("_output", out)
	}
	if len(defs.Keys) > 0 {
		d.Set("$defs", defs.Bytes())
	}
	if d.Get("description") == nil && description != "" {
		d.Set("description", ojson.Quote(description))
	}
	d.Set("properties", props.Bytes())
	if required != nil {
		rb, _ := json.Marshal(required)
		d.Set("required", rb)
	}
	return d.Bytes(), nil
}

// notParameters says why an Idea's input schema cannot be a tool's
// parameters, or returns "": the input's properties become the tool's,
// so one of another type, or a choice of shapes, would leave a tool the
// model cannot give the input to.
func notParameters(in *ojson.Object) string {
	if t := in.Get("type"); t != nil {
		types, ok := typesOf(t)
		if !ok {
			return "has a malformed type " + string(t)
		}
		if !slices.Contains(types, "object") {
			return "is of type " + compact(t)
		}
		return ""
	}
	if in.Get("properties") != nil {
		return ""
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "items", "enum", "const"} {
		if in.Get(k) != nil {
			return "has no properties"
		}
	}
	return "" // any value: a free-form input
}

// typesOf reads a schema's "type", one name or a list of them; ok is
// false when it is neither.
func typesOf(t json.RawMessage) (types []string, ok bool) {
	var one string
	if json.Unmarshal(t, &one) == nil {
		return []string{one}, true
	}
	return types, json.Unmarshal(t, &types) == nil
}

// UpfrontDelegates resolves upfront (014) every registered tool whose
// _delegate names an Idea, registered or read from fsys: its definition
// becomes ResolveDelegate's merge. Execution-time resolution, the
// default, needs no call: it happens when a call runs.
func (r *Registry) UpfrontDelegates(fsys fs.FS) error {
	r.mu.RLock()
	names := slices.Sorted(maps.Keys(r.tools))
	r.mu.RUnlock()
	for _, name := range names {
		def, err := r.LookupTool(name)
		if err != nil {
			return err
		}
		d := delegateOf(def)
		if d == "" || d == Anonymous {
			continue
		}
		idea, err := r.lookupIdea(d, fsys)
		if err != nil {
			return fmt.Errorf("tool %q: %w", name, err)
		}
		merged, err := ResolveDelegate(def, idea)
		if err != nil {
			return fmt.Errorf("tool %q: %w", name, err)
		}
		r.mu.Lock()
		r.tools[name] = merged
		r.mu.Unlock()
	}
	return nil
}
