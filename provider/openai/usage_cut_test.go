package openai

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// TestFailedStreamUsage: OpenAI says the usage only in the last chunk, so
// a stream cut before it says none; a compatible server that says it in
// every chunk (vLLM's continuous usage stats) has it reported before the
// error.
func TestFailedStreamUsage(t *testing.T) {
	const (
		piece     = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"{\"out"},"finish_reason":null}]}` + "\n\n"
		withUsage = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":"{\"out"},"finish_reason":null}],"usage":{"prompt_tokens":50,"completion_tokens":3,"total_tokens":53}}` + "\n\n"
	)
	for _, tt := range []struct {
		name      string
		body      string
		wantUsage provider.Usage
	}{
		{"OpenAI", piece, provider.Usage{}},
		{"usage in every chunk", withUsage, provider.Usage{Input: 50, Output: 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tt.body) // and the stream ends with no finish_reason
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-test", HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			res, err := provider.Collect(p.Generate(t.Context(), &provider.Request{Stream: true, Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}))
			if !errors.Is(err, provider.ErrTruncated) {
				t.Errorf("error %v, want a cut", err)
			}
			if got := strings.Join(res.Texts, ""); got != `{"out` {
				t.Errorf("text %q", got)
			}
			if diff := cmp.Diff(res.Usage, tt.wantUsage); diff != "" {
				t.Errorf("usage (-got +want):\n%s", diff)
			}
		})
	}
}
