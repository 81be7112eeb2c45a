// Package providertest is the conformance suite every provider adapter
// runs: [Run] drives the adapter through scenarios (plain and streamed
// answers, several solutions, thinking, usage, rate limits, server errors,
// truncated streams, cancellation) against a fake server that the
// adapter's test provides in its provider's real wire format.
package providertest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/augceo/agent/provider"
)

// Scenario is what the fake server must answer.
type Scenario struct {
	// Solutions are the texts of the answer's solutions (choices/candidates).
	Solutions []string
	// Thinking is reasoning text to send before the first solution, if the
	// provider's wire format can carry it.
	Thinking string
	// Usage is what the server reports, normalised; the fake server encodes
	// it in the provider's own fields (so Input+CacheRead for OpenAI's
	// prompt_tokens, and so on).
	Usage provider.Usage
	// Status, when not 0 or 200, makes the server fail with that status and
	// the provider's error body; RetryAfter then sets the Retry-After header.
	Status     int
	RetryAfter time.Duration
	// Truncate cuts the stream in the middle of the first solution's text,
	// without the provider's end-of-stream markers.
	Truncate bool
}

// Fake builds a provider whose requests reach a fake server that answers
// sc, streamed when the request asks for it. The server should check the
// request body with t.Errorf where the adapter's own tests do not.
type Fake func(t *testing.T, sc Scenario) provider.Provider

// Capabilities says which optional behaviours the provider's wire format has.
type Capabilities struct {
	Thinking bool // reasoning text is exposed
}

const solution = `{"output":{"answer":"Paris","notes":["a","b"]},"calls":[{"_tool":"lookup","q":"x\"y"}]}`

func request(stream bool, n int) *provider.Request {
	return &provider.Request{
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Text: "You are terse."},
			{Role: provider.RoleUser, Text: "What is the capital of France?"},
		},
		Schema:     []byte(`{"type":"object","properties":{"output":{"type":["object","null"]}},"required":["output"]}`),
		SchemaName: "solution",
		N:          n,
		Stream:     stream,
	}
}

// Run runs the conformance suite.
func Run(t *testing.T, fake Fake, caps Capabilities) {
	for _, stream := range []bool{false, true} {
		name := "plain"
		if stream {
			name = "stream"
		}
		t.Run(name+"/solution and usage", func(t *testing.T) {
			u := provider.Usage{Input: 100, Output: 40, CacheRead: 20}
			p := fake(t, Scenario{Solutions: []string{solution}, Usage: u})
			r, err := provider.Collect(p.Generate(context.Background(), request(stream, 1)))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Texts) != 1 || r.Texts[0] != solution {
				t.Errorf("texts %q, want [%q]", r.Texts, solution)
			}
			if r.Usage != u {
				t.Errorf("usage %+v, want %+v", r.Usage, u)
			}
		})
		t.Run(name+"/two solutions", func(t *testing.T) {
			sols := []string{`{"output":1}`, `{"output":2}`}
			p := fake(t, Scenario{Solutions: sols, Usage: provider.Usage{Input: 10, Output: 8}})
			r, err := provider.Collect(p.Generate(context.Background(), request(stream, 2)))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Texts) != 2 || r.Texts[0] != sols[0] || r.Texts[1] != sols[1] {
				t.Errorf("texts %q, want %q", r.Texts, sols)
			}
		})
		if caps.Thinking {
			t.Run(name+"/thinking", func(t *testing.T) {
				p := fake(t, Scenario{Solutions: []string{`{"output":1}`}, Thinking: "Let me think.", Usage: provider.Usage{Input: 5, Output: 3, Thinking: 7}})
				req := request(stream, 1)
				req.Thinking = 1024
				r, err := provider.Collect(p.Generate(context.Background(), req))
				if err != nil {
					t.Fatal(err)
				}
				if r.Thinking[0] != "Let me think." || r.Texts[0] != `{"output":1}` || r.Usage.Thinking != 7 {
					t.Errorf("got thinking %q text %q usage %+v", r.Thinking, r.Texts, r.Usage)
				}
			})
		}
		t.Run(name+"/rate limit", func(t *testing.T) {
			p := fake(t, Scenario{Status: http.StatusTooManyRequests, RetryAfter: 7 * time.Second})
			_, err := provider.Collect(p.Generate(context.Background(), request(stream, 1)))
			pe, ok := errors.AsType[*provider.Error](err)
			if !ok {
				t.Fatalf("got %v, want a *provider.Error", err)
			}
			if pe.Status != http.StatusTooManyRequests || pe.RetryAfter != 7*time.Second || !pe.Temporary() {
				t.Errorf("got %+v", pe)
			}
		})
		t.Run(name+"/bad request", func(t *testing.T) {
			p := fake(t, Scenario{Status: http.StatusBadRequest})
			_, err := provider.Collect(p.Generate(context.Background(), request(stream, 1)))
			pe, ok := errors.AsType[*provider.Error](err)
			if !ok || pe.Status != http.StatusBadRequest || pe.Temporary() || pe.Err == nil || pe.Err.Error() == "" {
				t.Fatalf("got %v, want a 400 *provider.Error with the provider's message", err)
			}
		})
		t.Run(name+"/server error", func(t *testing.T) {
			p := fake(t, Scenario{Status: http.StatusInternalServerError})
			_, err := provider.Collect(p.Generate(context.Background(), request(stream, 1)))
			pe, ok := errors.AsType[*provider.Error](err)
			if !ok || pe.Status != http.StatusInternalServerError || !pe.Temporary() {
				t.Fatalf("got %v, want a temporary 500 *provider.Error", err)
			}
		})
		t.Run(name+"/cancelled", func(t *testing.T) {
			p := fake(t, Scenario{Solutions: []string{solution}})
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := provider.Collect(p.Generate(ctx, request(stream, 1)))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
		})
	}
	t.Run("stream/truncated", func(t *testing.T) {
		p := fake(t, Scenario{Solutions: []string{solution}, Truncate: true})
		r, err := provider.Collect(p.Generate(context.Background(), request(true, 1)))
		if !errors.Is(err, provider.ErrTruncated) {
			t.Fatalf("got %v, want provider.ErrTruncated", err)
		}
		if len(r.Texts) == 0 || r.Texts[0] == "" || !strings.HasPrefix(solution, r.Texts[0]) {
			t.Errorf("the text received before the cut was lost: %q", r.Texts)
		}
	})
	t.Run("stream/break stops early", func(t *testing.T) {
		p := fake(t, Scenario{Solutions: []string{solution}})
		for range p.Generate(context.Background(), request(true, 1)) {
			break
		}
	})
}
