package message

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/augceo/agent/internal/jsonfast"
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
	if !jsonfast.Valid(result) {
		return nil, fmt.Errorf("message: result of call is not valid JSON")
	}
	e, err := ref.Parse(meta.OutputPath)
	if err != nil {
		return nil, fmt.Errorf("message: call _outputPath: %w", err)
	}
	method, err := ref.ParseMethod(meta.OutputMethod)
	if err != nil {
		return nil, fmt.Errorf("message: call _outputMethod: %w", err)
	}
	var targets ref.Group
	switch {
	case b == Failure && len(e.Alts) < 2:
		return nil, nil
	case b == Failure:
		targets = e.Alts[len(e.Alts)-1]
	case int(b) < len(e.Alts) && b >= 0:
		targets = e.Alts[b]
	default:
		return nil, fmt.Errorf("message: branch %d of %q, which has %d", b, meta.OutputPath, len(e.Alts))
	}
	instance := meta.Instance
	callc, resc := compactIfNeeded(call), compactIfNeeded(result)
	stamp := date.UTC().Format(time.RFC3339Nano)
	out := make([]Message, len(targets))
	for i, r := range targets {
		out[i] = Message{
			Type:       TypeData,
			Kind:       r.Kind,
			Instance:   instance,
			Data:       wrapRaw(r.Path, resc),
			Call:       callc,
			Date:       stamp,
			Method:     method,
			OutputPath: r.String(),
			written:    resc,
		}
	}
	return out, nil
}

// compactIfNeeded compacts valid JSON that has white space outside strings
// could hold, and returns compact input as it is.
func compactIfNeeded(v json.RawMessage) json.RawMessage {
	if bytes.ContainsAny(v, " \t\n\r") {
		return compact(v)
	}
	return v
}

// wrapRaw nests v under the keys of path: {"a":{"b":v}}.
func wrapRaw(path ref.Path, v json.RawMessage) json.RawMessage {
	if len(path) == 0 {
		return v
	}
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
