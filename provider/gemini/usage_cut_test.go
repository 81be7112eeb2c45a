package gemini

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

// TestFailedStreamUsage: a stream cut before its end says the latest
// usageMetadata an event had (the prompt's tokens, the candidates' so
// far) before its error, since a call that failed may be billed.
func TestFailedStreamUsage(t *testing.T) {
	const (
		first = `data: {"candidates":[{"content":{"parts":[{"text":"{\"out"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":2,"totalTokenCount":42},"modelVersion":"gemini-test"}` + "\r\n\r\n"
		bare  = `data: {"candidates":[{"content":{"parts":[{"text":"{\"out"}],"role":"model"},"index":0}],"modelVersion":"gemini-test"}` + "\r\n\r\n"
	)
	for _, tt := range []struct {
		name      string
		body      string
		wantUsage provider.Usage
	}{
		{"usage said", first, provider.Usage{Input: 40, Output: 2}},
		{"no usage said", bare, provider.Usage{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tt.body) // and the stream ends with no finishReason
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel, HTTPClient: srv.Client()})
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
