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
func RequestAs[T any](ctx context.Context, cfg Config, context []message.Message) ([]Typed[T], *Response, error) {
	if err := schema.Check[T](); err != nil {
		return nil, nil, errorf("agent: %w", err) // before the model is paid
	}
	resp, err := Request(ctx, cfg, schema.For[T](), context)
	if err != nil {
		return nil, resp, err
	}
	out := make([]Typed[T], len(resp.Solutions))
	for i, s := range resp.Solutions {
		out[i].Solution = s
		if s.Output == nil {
			continue
		}
		v, err := schema.Decode[T](s.Output)
		if err != nil {
			return nil, resp, errorf("agent: solution %d: %w", i, err)
		}
		out[i].Value = v
	}
	return out, resp, nil
}
