package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/augceo/agent/ref"
)

// Branch chooses the alternative of a branching output path
// (†state.receipt || †state.error) that a result is written to.
type Branch int

const (
	// Success writes to the first alternative.
	Success Branch = 0
	// Failure writes to the last alternative when the path declares more
	// than one; with a single alternative nothing is written.
	Failure Branch = -1
)

// Outputs returns the output messages (008) that record result for call:
// one data message per target of the chosen branch of the call's
// _outputPath, each holding result wrapped at its path, with the call, the
// date, the call's _outputMethod (set by default) and the target in hidden
// metadata. The call's _instance, if any, scopes every message. A call
// without _outputPath writes nothing. A Branch ≥ 0 picks that alternative
// explicitly, as an Activity does when it chooses the outcome.
func Outputs(call, result json.RawMessage, b Branch, date time.Time) ([]Message, error) {
	meta, err := ParseCallMeta(call)
	if err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	if meta.OutputPath == "" {
		return nil, nil
	}
	if !json.Valid(result) {
		return nil, errors.New("message: result of call is not valid JSON")
	}
	o, err := ParseOutput(meta)
	if err != nil {
		return nil, err
	}
	return o.messages(call, meta.Instance, result, b, date)
}

// Output is where and how a call writes its results: its _outputPath
// and _outputMethod parsed. A call that runs many times, or the calls of
// one plan's instances, share one Output and record each result with
// [Output.Messages] without parsing them again. An Output is immutable
// and safe for concurrent use.
type Output struct {
	Path   ref.Expr // the parsed _outputPath; no alternatives without one
	Method ref.Method
}

// ParseOutput parses the output path and method of a call whose
// meta-properties are meta.
func ParseOutput(meta CallMeta) (*Output, error) {
	if meta.OutputPath == "" {
		return &Output{}, nil
	}
	e, err := ref.Parse(meta.OutputPath)
	if err != nil {
		return nil, fmt.Errorf("message: call _outputPath: %w", err)
	}
	method, err := ref.ParseMethod(meta.OutputMethod)
	if err != nil {
		return nil, fmt.Errorf("message: call _outputMethod: %w", err)
	}
	return &Output{Path: e, Method: method}, nil
}

// Messages is [Outputs] for a call whose output is o: call is the call
// as it is recorded in each message, and instance its _instance.
func (o *Output) Messages(call json.RawMessage, instance string, result json.RawMessage, b Branch, date time.Time) ([]Message, error) {
	if len(o.Path.Alts) == 0 {
		return nil, nil
	}
	if !json.Valid(result) {
		return nil, errors.New("message: result of call is not valid JSON")
	}
	return o.messages(call, instance, result, b, date)
}

func (o *Output) messages(call json.RawMessage, instance string, result json.RawMessage, b Branch, date time.Time) ([]Message, error) {
	targets, err := o.branch(b)
	if err != nil || len(targets) == 0 {
		return nil, err
	}
	result = compact(result)
	stamp := date.UTC().Format(time.RFC3339Nano)
	out := make([]Message, len(targets))
	for i, t := range targets {
		out[i] = Message{
			Type:       TypeData,
			Kind:       t.Kind,
			Instance:   instance,
			Data:       wrapRaw(t.Path, result),
			Call:       compact(call),
			Date:       stamp,
			Method:     o.Method,
			OutputPath: t.String(),
		}
	}
	return out, nil
}

// branch returns the targets of branch b: none when b is Failure and the
// path does not branch.
func (o *Output) branch(b Branch) (ref.Group, error) {
	alts := o.Path.Alts
	switch {
	case b == Failure && len(alts) < 2:
		return nil, nil
	case b == Failure:
		return alts[len(alts)-1], nil
	case b >= 0 && int(b) < len(alts):
		return alts[b], nil
	}
	return nil, fmt.Errorf("message: branch %d of %q, which has %d", b, o.Path.Text, len(alts))
}

// wrapRaw returns a copy of v nested under the keys of path:
// {"a":{"b":v}}.
func wrapRaw(path ref.Path, v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	for _, seg := range path {
		b.WriteByte('{')
		writeString(&b, seg)
		b.WriteByte(':')
	}
	b.Write(v)
	for range path {
		b.WriteByte('}')
	}
	return b.Bytes()
}
