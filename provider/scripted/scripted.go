// Package scripted is the test double for provider.Provider: it answers
// each Generate with the next scripted response, optionally split into
// chunks, and records the requests it received. It never talks to a model
// and is never selected by default.
package scripted

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/augceo/agent/provider"
)

// ErrExhausted reports a Generate call with no response left.
var ErrExhausted = errors.New("scripted: no response left")

// Response is one scripted answer.
type Response struct {
	// Solutions are the texts of the solutions, one per choice.
	Solutions []string
	// Chunks, when set, stream the first solution in these pieces instead.
	Chunks []string
	// Thinking is streamed before the text of the first solution.
	Thinking string
	// Usage is reported on the last chunk.
	Usage provider.Usage
	// Err, when set, is yielded after the chunks (or instead of them).
	Err error
	// FinishReason is each solution's finish reason; "stop" when empty.
	FinishReason string
}

// Provider replays Responses in order. It is safe for concurrent use.
type Provider struct {
	mu        sync.Mutex
	responses []Response
	requests  []*provider.Request
}

var _ provider.Provider = (*Provider)(nil)

// New returns a Provider that answers with responses in order.
func New(responses ...Response) *Provider { return &Provider{responses: responses} }

// Solutions returns a Provider whose responses each hold one solution text.
func Solutions(texts ...string) *Provider {
	p := &Provider{}
	for _, t := range texts {
		p.responses = append(p.responses, Response{Solutions: []string{t}})
	}
	return p
}

// Requests returns copies of the requests received so far.
func (p *Provider) Requests() []provider.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]provider.Request, len(p.requests))
	for i, r := range p.requests {
		out[i] = *r
	}
	return out
}

// Generate yields the next response.
func (p *Provider) Generate(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
	return func(yield func(*provider.Chunk, error) bool) {
		p.mu.Lock()
		cp := *req
		cp.Messages = append([]provider.Message(nil), req.Messages...)
		p.requests = append(p.requests, &cp)
		if len(p.responses) == 0 {
			p.mu.Unlock()
			yield(nil, ErrExhausted)
			return
		}
		r := p.responses[0]
		p.responses = p.responses[1:]
		p.mu.Unlock()

		finish := cmp.Or(r.FinishReason, "stop")
		var chunks []*provider.Chunk
		if r.Thinking != "" {
			chunks = append(chunks, &provider.Chunk{Thinking: r.Thinking})
		}
		if r.Chunks != nil {
			for _, c := range r.Chunks {
				chunks = append(chunks, &provider.Chunk{Text: c})
			}
			chunks = append(chunks, &provider.Chunk{Done: true, FinishReason: finish})
		}
		for i, s := range r.Solutions {
			if r.Chunks != nil && i == 0 {
				continue
			}
			chunks = append(chunks, &provider.Chunk{Index: i, Text: s, Done: true, FinishReason: finish})
		}
		if r.Err == nil {
			u := r.Usage
			if len(chunks) == 0 {
				chunks = append(chunks, &provider.Chunk{})
			}
			chunks[len(chunks)-1].Usage = &u
		}
		for _, c := range chunks {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
		if r.Err != nil {
			yield(nil, r.Err)
		}
	}
}
