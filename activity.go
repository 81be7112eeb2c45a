package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/schema"
)

// Activity is the code behind a tool (003): it runs a call explicitly
// instead of letting the model produce the result latently.
//
// Run receives the call with its references already resolved and its
// parameters validated against the tool schema. It returns a Result: a
// value, written where the call's _outputPath says, or messages appended
// as they are (to choose a branch, say). Run may be called concurrently for
// different calls. A panic in Run is recovered and reported as a runtime
// error of that call, and so are a runtime.Goexit, which ends the
// goroutine the call ran on, and an error whose Error method panics (a
// nil *T returned as an error).
type Activity interface {
	Run(ctx context.Context, call *Call) (*Result, error)
}

// ActivityFunc adapts a function to an Activity.
type ActivityFunc func(ctx context.Context, call *Call) (*Result, error)

// Run calls f.
func (f ActivityFunc) Run(ctx context.Context, call *Call) (*Result, error) { return f(ctx, call) }

// Result is what an Activity produced.
type Result struct {
	// Value is the result, written to the call's _outputPath; nil or
	// empty writes null, and is not checked against the tool's _output.
	Value json.RawMessage
	// Branch picks the alternative of a branching _outputPath
	// (†state.ok || †state.failed); the zero value is the first.
	Branch message.Branch
	// Messages, when set, are appended as they are instead of Value.
	Messages []message.Message
}

// Value returns a Result holding v encoded as JSON.
func Value(v any) (*Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, errorf("agent: encode result: %w", err)
	}
	return &Result{Value: b}, nil
}

// Bind makes an Activity of a typed function: the call's parameters are
// validated against P's schema and decoded into a P, and the R it returns
// is encoded as the result. Meta-properties (_tool, _outputPath, ...) are
// not part of P unless P declares them.
func Bind[P, R any](f func(ctx context.Context, params P) (R, error)) Activity {
	var meta []string
	if schema.Check[P]() == nil { // else Decode says why, call by call
		meta = declaredMeta(schema.For[P]())
	}
	return ActivityFunc(func(ctx context.Context, call *Call) (*Result, error) {
		p, err := schema.Decode[P](call.argsWith(meta))
		if err != nil {
			return nil, &CallError{Kind: Structural, Err: fmt.Errorf("params: %w", err)}
		}
		r, err := f(ctx, p)
		if err != nil {
			return nil, err
		}
		return Value(r)
	})
}

// declaredMeta returns the meta-properties ("_"-prefixed) among the
// properties of the object schema s, its root definition's when s refers
// to one (a recursive type).
func declaredMeta(s json.RawMessage) []string {
	if !bytes.Contains(s, []byte(`"_`)) {
		return nil
	}
	if body, defs, err := schema.Embed(s, "params", nil); err == nil {
		s = schema.Deref(body, defs)
	}
	var o struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(s, &o)
	var meta []string
	for k := range o.Properties {
		if strings.HasPrefix(k, "_") {
			meta = append(meta, k)
		}
	}
	return meta
}

// Activity registers a under name. A tool uses it when its definition
// names it in _activity, or when the tool has the same name (003).
func (r *Registry) Activity(name string, a Activity) {
	if name == "" || a == nil {
		panic("agent: Activity with an empty name or a nil activity")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.activities == nil {
		r.activities = map[string]Activity{}
	}
	if _, ok := r.activities[name]; ok {
		panic(fmt.Sprintf("agent: activity %q is already registered", name))
	}
	r.activities[name] = a
}

// ActivityNames returns the names of the registered activities, sorted.
func (r *Registry) ActivityNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.activities))
}

// resolveActivity applies the resolution of page 003: the tool's
// _activity if set, else an activity named like the tool, else none
// (latent). It returns the activity's name too.
func (r *Registry) resolveActivity(tool string, def json.RawMessage) (Activity, string, error) {
	return r.activityNamed(tool, activityOf(def))
}

// activityOf returns a tool definition's _activity, or "".
func activityOf(def json.RawMessage) string {
	if !bytes.Contains(def, []byte(`"_activity"`)) { // most definitions have none: skip the decode
		return ""
	}
	var d struct {
		Activity string `json:"_activity"`
	}
	_ = json.Unmarshal(def, &d)
	return d.Activity
}

// activityNamed is resolveActivity for a tool whose _activity is name.
func (r *Registry) activityNamed(tool, name string) (Activity, string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if name != "" {
		a, ok := r.activities[name]
		if !ok {
			return nil, "", fmt.Errorf("tool %q names activity %q, which is not registered", tool, name)
		}
		return a, name, nil
	}
	if a, ok := r.activities[tool]; ok {
		return a, tool, nil
	}
	return nil, "", nil
}
