package openai

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// TestCutAfterFinish: a stream that breaks once every choice had its
// finish_reason "stop" lost nothing of the answer: it ends well, with its
// usage when the server had said it, and UsageLost when it had not (the
// usage chunk was what the cut took). A stream cut before a choice's
// finish_reason, or after one that is not "stop", fails as before.
func TestCutAfterFinish(t *testing.T) {
	const (
		piece = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"{\"output\":1}"},"finish_reason":null}]}` + "\n\n"
		stop  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
		long  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}` + "\n\n"
		// A second choice, which the answer to N 2 has too.
		piece1 = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":1,"delta":{"content":"{\"output\":2}"},"finish_reason":null}]}` + "\n\n"
		stop1  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":1,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
		usage  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":3,"total_tokens":53}}` + "\n\n"
		// vLLM's continuous usage stats: in every chunk.
		stopUsage = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":3,"total_tokens":53}}` + "\n\n"
	)
	for _, tt := range []struct {
		name      string
		n         int
		body      string
		reset     bool // the connection is cut after body; else the body ends
		wantTexts []string
		wantUsage provider.Usage
		wantLost  bool
		wantErr   error // nil: none
	}{
		{"cut after stop", 1, piece + stop, true, []string{`{"output":1}`}, provider.Usage{}, true, nil},
		{"ended after stop", 1, piece + stop, false, []string{`{"output":1}`}, provider.Usage{}, true, nil},
		{"cut after the usage", 1, piece + stop + usage, true, []string{`{"output":1}`}, provider.Usage{Input: 50, Output: 3}, false, nil},
		{"cut after stop, usage in every chunk", 1, piece + stopUsage, true, []string{`{"output":1}`}, provider.Usage{Input: 50, Output: 3}, false, nil},
		{"cut after both stopped", 2, piece + piece1 + stop + stop1, true, []string{`{"output":1}`, `{"output":2}`}, provider.Usage{}, true, nil},
		{"whole", 1, piece + stop + usage + "data: [DONE]\n\n", false, []string{`{"output":1}`}, provider.Usage{Input: 50, Output: 3}, false, nil},
		// A compatible server that ignores stream_options.include_usage.
		{"whole, no usage said", 1, piece + stop + "data: [DONE]\n\n", false, []string{`{"output":1}`}, provider.Usage{}, true, nil},
		{"both whole, no usage said", 2, piece + piece1 + stop + stop1 + "data: [DONE]\n\n", false, []string{`{"output":1}`, `{"output":2}`}, provider.Usage{}, true, nil},
		{"cut before stop", 1, piece, true, []string{`{"output":1}`}, provider.Usage{}, false, provider.ErrTruncated},
		{"ended before stop", 1, piece, false, []string{`{"output":1}`}, provider.Usage{}, false, provider.ErrTruncated},
		{"cut before the other's stop", 2, piece + piece1 + stop, true, []string{`{"output":1}`, `{"output":2}`}, provider.Usage{}, false, provider.ErrTruncated},
		{"cut after length", 1, piece + long, true, []string{`{"output":1}`}, provider.Usage{}, false, provider.ErrTruncated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tt.body)
				if !tt.reset {
					return
				}
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close() // the chunked body never ends
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-test", HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			req := replayRequest(true)
			req.N = tt.n
			res, err := provider.Collect(p.Generate(t.Context(), req))
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(res.Texts, tt.wantTexts); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(res.Usage, tt.wantUsage); diff != "" {
				t.Errorf("usage (-got +want):\n%s", diff)
			}
			if res.UsageLost != tt.wantLost {
				t.Errorf("UsageLost %v, want %v", res.UsageLost, tt.wantLost)
			}
		})
	}
}

// TestNoUsageSaid: an answer that does not stream whose body has no
// usage (a compatible server that counts none) says the usage is lost,
// as a stream without it does, so that a caller counting tokens knows
// its count is short; one with the usage does not.
func TestNoUsageSaid(t *testing.T) {
	const (
		head  = `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"{\"output\":1}"},"finish_reason":"stop"}]`
		usage = `,"usage":{"prompt_tokens":50,"completion_tokens":3,"total_tokens":53}`
	)
	for _, tt := range []struct {
		name      string
		body      string
		wantUsage provider.Usage
		wantLost  bool
	}{
		{"usage said", head + usage + "}", provider.Usage{Input: 50, Output: 3}, false},
		{"no usage", head + "}", provider.Usage{}, true},
		{"usage null", head + `,"usage":null}`, provider.Usage{}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-test", HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			res, err := provider.Collect(p.Generate(t.Context(), replayRequest(false)))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(res.Usage, tt.wantUsage); diff != "" {
				t.Errorf("usage (-got +want):\n%s", diff)
			}
			if res.UsageLost != tt.wantLost {
				t.Errorf("UsageLost %v, want %v", res.UsageLost, tt.wantLost)
			}
		})
	}
}
