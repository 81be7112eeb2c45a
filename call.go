package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
)

// Call is one tool call (004) on its way to execution.
type Call struct {
	// Raw is the call as the model wrote it, references unresolved.
	Raw json.RawMessage
	// Params is the call with every reference replaced by its value.
	Params json.RawMessage
	// Tool, Instance, OutputPath and OutputMethod are the call's
	// meta-properties _tool, _instance, _outputPath and _outputMethod.
	Tool         string
	Instance     string
	OutputPath   string
	OutputMethod string
	// Schema is the tool's definition.
	Schema json.RawMessage
	// ID names the call within its run: its position in a plan ("7"), or
	// its step and position in that step's solution ("2.0"). A durable
	// run's journal records calls by it.
	ID string

	scoped []message.Message // what its _scopes let it see
	output *message.Output   // its output path and method, parsed when prepared
	shape  *shaped           // its tool, when prepared
	valid  json.RawMessage   // Params as prepared: a valid JSON object
	noRefs bool              // no parameter holds a dagger: Params is Raw

	// The loop resolves the activity when it launches the call.
	activity Activity
	resolved bool

	// Room for the parsed output of a streamed call, in the call's own
	// allocation (see parseCall); nil for others.
	outStore *message.OutputStore
}

// parsedCall is a Call read from its raw form with room for its output:
// one allocation, where a planned call, whose output its plan parsed,
// does not carry the room.
type parsedCall struct {
	c   Call
	out message.OutputStore
}

// outputs returns the output messages that record result for c.
func (c *Call) outputs(result json.RawMessage, b message.Branch, date time.Time) ([]message.Message, error) {
	if c.output == nil {
		return message.Outputs(c.Raw, result, b, date)
	}
	return c.output.Messages(c.Raw, c.Instance, result, b, date)
}

// paramsValid reports whether Params is still the valid JSON object
// prepare made, so that it need not be checked again.
func (c *Call) paramsValid() bool {
	return len(c.Params) > 0 && len(c.valid) == len(c.Params) && &c.valid[0] == &c.Params[0]
}

// resolveActivity resolves c's activity (003).
func (c *Call) resolveActivity(r *Registry) (Activity, string, error) {
	if c.shape != nil {
		return c.shape.activityIn(r, c.Tool)
	}
	return r.resolveActivity(c.Tool, c.Schema)
}

// delegate returns the Idea c's tool delegates to, or "".
func (c *Call) delegate() string {
	if c.shape != nil {
		return c.shape.delegate
	}
	return delegateOf(c.Schema)
}

// Context returns what of the context the call may see: exactly what its
// _scopes name (015), as merged values. A call without scopes sees
// nothing.
func (c *Call) Context() []message.Message { return slices.Clone(c.scoped) }

// Args returns the parameters without meta-properties.
func (c *Call) Args() json.RawMessage {
	if !jsonfast.Valid(c.Params) {
		return c.Params
	}
	b := make([]byte, 1, len(c.Params)) // no longer than the parameters, but for odd escapes
	b[0] = '{'
	if bytes.TrimLeft(c.Params, " \t\r\n")[0] != '{' { // not an object: as it always did
		jsonfast.Members(c.Params, func(k string, v []byte) bool {
			if !strings.HasPrefix(k, "_") {
				if len(b) > 1 {
					b = append(b, ',')
				}
				b = ojson.AppendQuote(b, k)
				b = append(b, ':')
				b = append(b, v...)
			}
			return true
		})
		return append(b, '}')
	}
	jsonfast.RawMembers(c.Params, func(lit, v []byte) bool {
		plain := plainKey(lit)
		var k string
		if !plain {
			k = jsonfast.Unquote(lit)
		}
		if plain && len(lit) > 2 && lit[1] == '_' || !plain && strings.HasPrefix(k, "_") {
			return true
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		if plain {
			b = append(b, lit...) // what AppendQuote would write again
		} else {
			b = ojson.AppendQuote(b, k)
		}
		b = append(b, ':')
		b = append(b, v...)
		return true
	})
	return append(b, '}')
}

// plainKey reports whether a key literal is its own quoting: printable
// ASCII without escapes.
func plainKey(lit []byte) bool {
	for _, c := range lit[1 : len(lit)-1] {
		if c < 0x20 || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// ErrorKind says whether a call failed before it ran or while running.
type ErrorKind string

// The kinds of call errors (010): structural errors are the model's to fix
// (bad parameters, references, unknown tools); runtime errors come from
// running the call.
const (
	Structural ErrorKind = "structural"
	Runtime    ErrorKind = "runtime"
)

// CallError is why a call failed. It becomes an error message the model
// sees on its next step.
type CallError struct {
	Kind ErrorKind
	Tool string
	Err  error
}

func (e *CallError) Error() string {
	if e.Tool == "" {
		return fmt.Sprintf("%s error: %v", e.Kind, e.Err)
	}
	return fmt.Sprintf("%s error in %s: %v", e.Kind, e.Tool, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// ErrorMessage returns the error message (010) that reports err for call.
func ErrorMessage(call json.RawMessage, err error) message.Message {
	kind := Runtime
	var ce *CallError
	if errors.As(err, &ce) {
		kind = ce.Kind
	}
	extra, _ := json.Marshal(map[string]string{"kind": string(kind)})
	return message.Message{Type: message.TypeError, Failed: call, Error: err.Error(), Extra: extra}
}

// parseCall reads the meta-properties of a raw call. With valid, raw is
// known to be valid JSON, as the Extractor hands over.
func parseCall(raw json.RawMessage, valid bool) (*Call, error) { return parseCallIn(nil, raw, valid) }

// parseCallIn is parseCall that takes the Call from s when s is not nil.
func parseCallIn(s *callSlab, raw json.RawMessage, valid bool) (*Call, error) {
	// A call's bytes never change once the run has them (a replacement
	// from Confirm is copied): its meta-properties can share them.
	m, refs, err := message.ParseCallMetaShared(raw, valid)
	if err != nil {
		return nil, &CallError{Kind: Structural, Err: err}
	}
	if m.Tool == "" {
		return nil, &CallError{Kind: Structural, Err: errors.New("the call has no _tool")}
	}
	c := newCall(s)
	*c = Call{Raw: raw, Tool: m.Tool, Instance: m.Instance, OutputPath: m.OutputPath, OutputMethod: m.OutputMethod, noRefs: !refs, outStore: c.outStore}
	return c, nil
}

// newCall returns a zero Call with room for its output: taken from s
// when s is not nil, else in one allocation with the room.
func newCall(s *callSlab) *Call {
	if s != nil {
		return s.take()
	}
	p := new(parsedCall)
	p.c.outStore = &p.out
	return &p.c
}
