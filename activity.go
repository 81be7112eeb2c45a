package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/augceo/agent/internal/flatjson"
	"github.com/augceo/agent/internal/jsonfast"
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
// error of that call.
type Activity interface {
	Run(ctx context.Context, call *Call) (*Result, error)
}

// ActivityFunc adapts a function to an Activity.
type ActivityFunc func(ctx context.Context, call *Call) (*Result, error)

// Run calls f.
func (f ActivityFunc) Run(ctx context.Context, call *Call) (*Result, error) { return f(ctx, call) }

// Result is what an Activity produced.
type Result struct {
	// Value is the result, written to the call's _outputPath.
	Value json.RawMessage
	// Branch picks the alternative of a branching _outputPath
	// (†state.ok || †state.failed); the zero value is the first.
	Branch message.Branch
	// Messages, when set, are appended as they are instead of Value.
	Messages []message.Message

	// lent is the frame that holds a bound function's Result, when the
	// run lent it: the run gives it back once it copied Value.
	lent interface{ giveBack() }
	// enc is the encoder of a bound function that made Value, when one
	// did: the tool's _output may hold for all it makes (see implies).
	enc *flatEnc
}

// Value returns a Result holding v encoded as JSON.
func Value(v any) (*Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("agent: encode result: %w", err)
	}
	return &Result{Value: b}, nil
}

// Bind makes an Activity of a typed function: the call's parameters are
// validated against P's schema and decoded into a P, and the R it returns
// is encoded as the result. Meta-properties (_tool, _outputPath, ...) are
// not part of P unless P declares them.
func Bind[P, R any](f func(ctx context.Context, params P) (R, error)) Activity {
	enc := flatEncoder(reflect.TypeFor[R]())
	// A struct of plain fields is decoded from the parameters as they
	// are, meta-properties skipped, when that stands for validating and
	// decoding call.Args(); anything else goes that way.
	dec := flatjson.New(reflect.TypeFor[P]())
	if dec != nil && (dec.Meta() || dec.Schema() != string(schema.For[P]())) {
		dec = nil
	}
	frames := &sync.Pool{}
	return &bound{run: func(ctx context.Context, call *Call, lend bool) (*Result, error) {
		// One allocation holds the parameters, the result, its encoding
		// and the Result: reflect needs them addressable, and small
		// results fit. A lent frame comes back (see bound) for the next.
		var fr *bindFrame[P, R]
		if lend {
			fr, _ = frames.Get().(*bindFrame[P, R])
		}
		if fr == nil {
			fr = &bindFrame[P, R]{pool: frames}
		}
		if dec == nil || !call.paramsValid() && !jsonfast.Valid(call.Params) || !dec.Decode(call.Params, reflect.ValueOf(&fr.p).Elem(), true) {
			var err error
			if fr.p, err = schema.Decode[P](call.Args()); err != nil {
				return nil, &CallError{Kind: Structural, Err: fmt.Errorf("params: %w", err)}
			}
		}
		var err error
		if fr.r, err = f(ctx, fr.p); err != nil {
			return nil, err
		}
		if enc != nil {
			if b, ok := enc.encode(fr.buf[:0], reflect.ValueOf(&fr.r).Elem()); ok {
				// The log keeps the Value, and with it the frame: let go of
				// what the parameters and the result point to.
				var p P
				var r R
				fr.p, fr.r, fr.res.Value, fr.res.enc = p, r, b, enc
				if lend {
					fr.res.lent = fr
				}
				return &fr.res, nil
			}
		}
		res, err := Value(fr.r)
		if lend {
			var p P
			var r R
			fr.p, fr.r = p, r
			fr.giveBack()
		}
		return res, err
	}}
}

// bound is the Activity of a function Bind made. It hands the function
// the decoded parameters, never the Call (see keepsNoCall).
type bound struct {
	// run runs the call; with lend, the caller gives the Result back
	// once it has copied the Value (see Result.lent).
	run func(ctx context.Context, call *Call, lend bool) (*Result, error)
}

func (b *bound) Run(ctx context.Context, call *Call) (*Result, error) { return b.run(ctx, call, false) }

// bindFrame is what one call of a bound function needs.
type bindFrame[P, R any] struct {
	p    P
	r    R
	res  Result
	buf  [64]byte
	pool *sync.Pool // of the Bind that made it
}

func (f *bindFrame[P, R]) giveBack() {
	f.res = Result{}
	f.pool.Put(f)
}

// flatEnc encodes a struct of integers, booleans and strings with plain
// member names as json.Marshal does, without its reflection walk.
type flatEnc struct {
	fields []flatEncField
}

type flatEncField struct {
	index     int
	key       string // `"name":`
	omitEmpty bool
	jsonType  string // what its values are: "integer", "boolean" or "string"
}

// flatEncoder returns the encoder of t, or nil when t is not such a
// struct.
func flatEncoder(t reflect.Type) *flatEnc {
	if t.Kind() != reflect.Struct || t.NumField() == 0 {
		return nil
	}
	e := &flatEnc{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Anonymous {
			return nil
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" {
			name = sf.Name
		}
		if !flatjson.PlainName(name) || (opts != "" && opts != "omitempty") {
			return nil
		}
		jsonType := flatjson.JSONType(sf.Type.Kind())
		if jsonType == "" {
			return nil
		}
		e.fields = append(e.fields, flatEncField{index: i, key: `"` + name + `":`, omitEmpty: opts == "omitempty", jsonType: jsonType})
	}
	return e
}

// encode appends v to b; ok is false for a string json.Marshal would
// escape.
func (e *flatEnc) encode(b []byte, v reflect.Value) (_ []byte, ok bool) {
	b = append(b, '{')
	start := len(b)
	for _, f := range e.fields {
		fv := v.Field(f.index)
		if f.omitEmpty && fv.IsZero() {
			continue
		}
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(b, f.key...)
		switch fv.Kind() {
		case reflect.Bool:
			b = strconv.AppendBool(b, fv.Bool())
		case reflect.String:
			s := fv.String()
			for i := range len(s) {
				if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
					return nil, false
				}
			}
			b = append(append(append(b, '"'), s...), '"')
		default:
			if fv.CanInt() {
				b = strconv.AppendInt(b, fv.Int(), 10)
			} else {
				b = strconv.AppendUint(b, fv.Uint(), 10)
			}
		}
	}
	return append(b, '}'), true
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
	r.version.Add(1)
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
