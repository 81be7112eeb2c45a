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
	// Params is the whole call with every reference replaced by its
	// value, meta-properties (_tool, _outputPath, …) included; Args
	// returns the parameters alone.
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

	// The scheduler resolves the activity when it starts the call.
	activity Activity
	resolved bool
}

// handed returns a copy of c for user code (an activity, Confirm, an
// event), whose bytes it owns: writing over them changes neither the
// log, nor the calls after it, nor the tool's definition.
func (c *Call) handed() *Call {
	h := *c
	h.Raw = bytes.Clone(c.Raw)
	h.Params = bytes.Clone(c.Params)
	h.Schema = bytes.Clone(c.Schema)
	return &h
}

// outputs returns the output messages that record result for c.
func (c *Call) outputs(result json.RawMessage, b message.Branch, date time.Time) ([]message.Message, error) {
	if c.output == nil {
		return message.Outputs(c.Raw, result, b, date)
	}
	return c.output.Messages(c.Raw, c.Instance, result, b, date)
}

// resolveActivity resolves c's activity (003).
func (c *Call) resolveActivity(r *Registry) (Activity, string, error) {
	if c.shape != nil {
		return r.activityNamed(c.Tool, c.shape.activity)
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

// Args returns the parameters without meta-properties, as written and
// in their order. Parameters that are not a JSON object come back as
// they are.
func (c *Call) Args() json.RawMessage { return c.argsWith(nil) }

// argsWith is Args with the meta-properties named in meta kept.
func (c *Call) argsWith(meta []string) json.RawMessage {
	if !jsonfast.Valid(c.Params) || bytes.TrimLeft(c.Params, " \t\r\n")[0] != '{' {
		return bytes.Clone(c.Params)
	}
	b := make([]byte, 1, len(c.Params)) // no longer, but for odd escapes
	b[0] = '{'
	jsonfast.Members(c.Params, func(k string, v []byte) bool {
		if !strings.HasPrefix(k, "_") || slices.Contains(meta, k) {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = append(append(ojson.AppendQuote(b, k), ':'), v...)
		}
		return true
	})
	return append(b, '}')
}

// ErrorKind says whether a call failed before it ran or while running.
type ErrorKind string

// The kinds of call errors (010): structural errors are the model's to fix
// (bad parameters, references, unknown tools); runtime errors come from
// running the call. A rejected call was refused by Config.Confirm, a
// vetoed one by the advisors' tally (017).
const (
	Structural ErrorKind = "structural"
	Runtime    ErrorKind = "runtime"
	Rejected   ErrorKind = "rejected"
	Vetoed     ErrorKind = "vetoed"
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
		return fmt.Sprintf("%s error: %s", e.Kind, inner(e.Err))
	}
	return fmt.Sprintf("%s error in %s: %s", e.Kind, e.Tool, inner(e.Err))
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

// parseCall reads the meta-properties of a raw call.
func parseCall(raw json.RawMessage) (*Call, error) {
	m, err := message.ParseCallMeta(raw)
	if err != nil {
		return nil, &CallError{Kind: Structural, Err: err}
	}
	if m.Tool == "" {
		return nil, &CallError{Kind: Structural, Err: errors.New("the call has no _tool")}
	}
	return &Call{Raw: raw, Tool: m.Tool, Instance: m.Instance, OutputPath: m.OutputPath, OutputMethod: m.OutputMethod}, nil
}
