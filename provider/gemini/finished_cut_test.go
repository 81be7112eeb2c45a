package gemini

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// TestCutAfterFinish: a stream that breaks after the event in which every
// candidate had its finishReason STOP, with the usageMetadata, lost
// nothing: it ends well, with that usage, which is the whole of it. A
// stream cut before a candidate's finishReason, or after one that is not
// STOP, fails as before.
func TestCutAfterFinish(t *testing.T) {
	const (
		piece  = `data: {"candidates":[{"content":{"parts":[{"text":"{\"output\":"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":2,"totalTokenCount":42},"modelVersion":"gemini-test"}` + "\r\n\r\n"
		last   = `data: {"candidates":[{"content":{"parts":[{"text":"1}"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":5,"totalTokenCount":45},"modelVersion":"gemini-test"}` + "\r\n\r\n"
		long   = `data: {"candidates":[{"content":{"parts":[{"text":"1}"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":5,"totalTokenCount":45},"modelVersion":"gemini-test"}` + "\r\n\r\n"
		safety = `data: {"candidates":[{"content":{"parts":[{"text":"1}"}],"role":"model"},"finishReason":"SAFETY","index":0}],"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":5,"totalTokenCount":45},"modelVersion":"gemini-test"}` + "\r\n\r\n"
		// Both candidates of N 2, the second not finished.
		both    = `data: {"candidates":[{"content":{"parts":[{"text":"{\"output\":1}"}],"role":"model"},"finishReason":"STOP","index":0},{"content":{"parts":[{"text":"{\"output\":"}],"role":"model"},"index":1}],"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":5,"totalTokenCount":45},"modelVersion":"gemini-test"}` + "\r\n\r\n"
		bothEnd = `data: {"candidates":[{"content":{"parts":[{"text":"2}"}],"role":"model"},"finishReason":"STOP","index":1}],"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":9,"totalTokenCount":49},"modelVersion":"gemini-test"}` + "\r\n\r\n"
	)
	for _, tt := range []struct {
		name       string
		n          int
		body       string
		wantTexts  []string
		wantFinish []string
		wantUsage  provider.Usage
		wantErr    error // nil: none
	}{
		{"cut after STOP", 1, piece + last, []string{`{"output":1}`}, []string{"stop"}, provider.Usage{Input: 40, Output: 5}, nil},
		{"cut after both STOP", 2, both + bothEnd, []string{`{"output":1}`, `{"output":2}`}, []string{"stop", "stop"}, provider.Usage{Input: 40, Output: 9}, nil},
		{"cut before STOP", 1, piece, []string{`{"output":`}, []string{""}, provider.Usage{Input: 40, Output: 2}, provider.ErrTruncated},
		{"cut before the other's STOP", 2, both, []string{`{"output":1}`, `{"output":`}, []string{"stop", ""}, provider.Usage{Input: 40, Output: 5}, provider.ErrTruncated},
		{"cut after MAX_TOKENS", 1, piece + long, []string{`{"output":1}`}, []string{"length"}, provider.Usage{Input: 40, Output: 5}, provider.ErrTruncated},
		{"cut after SAFETY", 1, piece + safety, []string{`{"output":1}`}, []string{"content_filter"}, provider.Usage{Input: 40, Output: 5}, provider.ErrTruncated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tt.body)
				w.(http.Flusher).Flush()
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close() // the chunked body never ends
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel, HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			res, err := provider.Collect(p.Generate(t.Context(), &provider.Request{Stream: true, N: tt.n, Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}}))
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(res.Texts, tt.wantTexts); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(res.FinishReasons, tt.wantFinish); diff != "" {
				t.Errorf("finish reasons (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(res.Usage, tt.wantUsage); diff != "" {
				t.Errorf("usage (-got +want):\n%s", diff)
			}
			if res.UsageLost {
				t.Error("UsageLost, though usageMetadata said the usage")
			}
		})
	}
}
