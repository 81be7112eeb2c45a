package agent

import (
	"context"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/schema"
)

// Typed is a solution whose output is decoded into T.
type Typed[T any] struct {
	Solution
	// Value is the decoded output; the zero T when the solution has none.
	Value T
}

// RequestAs runs a Request whose output schema is derived from T (struct
// tags give descriptions; see schema.For) and decodes each validated
// output into a T.
//
// An output can conform to the schema and still not decode (a 1.0 for an
// int8 field: an integer to JSON Schema, not to encoding/json). Such a
// solution is left out of the results, and RequestAs returns the others
// with an *[UndecodedError] that names it, as os.ReadDir returns what it
// read with its error; the Response holds every solution.
func RequestAs[T any](ctx context.Context, cfg Config, context []message.Message) ([]Typed[T], *Response, error) {
	if err := schema.Check[T](); err != nil {
		return nil, nil, errorf("agent: %w", err) // before the model is paid
	}
	resp, err := Request(ctx, cfg, schema.For[T](), context)
	if err != nil {
		return nil, resp, err
	}
	var out []Typed[T]
	var undecoded UndecodedError
	for i, s := range resp.Solutions {
		t := Typed[T]{Solution: s}
		if s.Output != nil {
			v, err := schema.Decode[T](s.Output)
			if err != nil {
				undecoded.Indexes = append(undecoded.Indexes, i)
				undecoded.Errs = append(undecoded.Errs, err)
				continue
			}
			t.Value = v
		}
		out = append(out, t)
	}
	if len(undecoded.Indexes) > 0 {
		return out, resp, &undecoded
	}
	return out, resp, nil
}
