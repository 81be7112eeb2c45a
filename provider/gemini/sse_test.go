package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/memhttp"
)

// TestStreamFraming replays a recorded stream written as other servers of
// server-sent events may write it (a proxy in front of the API, say),
// in pieces of a few bytes: every framing gives the recorded answer.
func TestStreamFraming(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "stream_thinking.sse"))
	if err != nil {
		t.Fatal(err)
	}
	// The API ends its lines with CRLF; the variants start from LF.
	lf := strings.TrimSpace(strings.ReplaceAll(string(b), "\r\n", "\n"))
	events := strings.Split(lf, "\n\n")
	each := func(f func(event string) string) string {
		var out []string
		for _, e := range events {
			out = append(out, f(e))
		}
		return strings.Join(out, "\n\n") + "\n\n"
	}
	want := &provider.Result{Texts: []string{recordedSolution}, Thinking: []string{recordedThinking}, FinishReasons: []string{"stop"},
		Usage: provider.Usage{Input: 24, Output: 37, Thinking: 48, CacheRead: 128}}
	for _, tt := range []struct {
		name string
		body string
	}{
		{"as recorded", string(b)},
		{"LF", lf + "\n\n"},
		{"CR", strings.ReplaceAll(lf+"\n\n", "\n", "\r")},
		{"comments", ": connected\n\n" + each(func(e string) string { return ": keep-alive\n" + e })},
		{"other fields", each(func(e string) string { return "retry: 3000\nid: 7\nevent: message\n" + e })},
		{"data in two lines", each(func(e string) string { return strings.Replace(e, "data: {", "data: {\ndata:", 1) })},
		{"an empty data line", each(func(e string) string { return strings.Replace(e, "data: {", "data: {\ndata:\ndata:", 1) })},
		{"an empty data line last", each(func(e string) string { return e + "\ndata:" })},
		{"no final blank line", lf},
	} {
		for _, size := range []int{1, 3, 7, len(tt.body)} {
			t.Run(fmt.Sprintf("%s/pieces of %d bytes", tt.name, size), func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					for s := range chunks(tt.body, size) {
						w.Write([]byte(s))
						w.(http.Flusher).Flush()
					}
				}))
				defer srv.Close()
				p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
				if err != nil {
					t.Fatal(err)
				}
				got, chunks, err := collect(p.Generate(context.Background(), &provider.Request{Stream: true}))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(got, want); diff != "" {
					t.Errorf("result (-got +want):\n%s", diff)
				}
				checkChunks(t, chunks)
			})
		}
	}
}

// chunks cuts s into pieces of size bytes.
func chunks(s string, size int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			n := min(size, len(s))
			if !yield(s[:n]) {
				return
			}
			s = s[n:]
		}
	}
}

// TestKeepAliveComments checks that comment lines count as activity: a
// stream that sends only a comment every 20 s while the model thinks does
// not hit an idle timeout of 30 s.
func TestKeepAliveComments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			writeEvent(w, wireResponse{Candidates: []wireCandidate{{Content: wireContent{Role: "model", Parts: []wirePart{{Text: `{"a":`}}}}}})
			for range 5 {
				select {
				case <-time.After(20 * time.Second):
				case <-r.Context().Done():
					return
				}
				w.Write([]byte(": keep-alive\n\n"))
				w.(http.Flusher).Flush()
			}
			writeEvent(w, wireResponse{Candidates: []wireCandidate{{Content: wireContent{Role: "model", Parts: []wirePart{{Text: `1}`}}}, FinishReason: "STOP"}}})
		})
		p, err := New(Config{APIKey: testKey, BaseURL: "http://provider.test", Model: testModel,
			HTTPClient: &http.Client{Transport: memhttp.Transport{Handler: h}}, IdleTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		got, err := provider.Collect(p.Generate(t.Context(), &provider.Request{Stream: true}))
		if err != nil {
			t.Fatal(err)
		}
		if got.Texts[0] != `{"a":1}` {
			t.Errorf("text %q, want %q", got.Texts[0], `{"a":1}`)
		}
	})
}

// TestErrorEventShapes: an error event that is not the API's own (a
// proxy's, in OpenAI's form or as text) ends the stream with its
// message and the model, rather than passing for an answer without
// candidates.
func TestErrorEventShapes(t *testing.T) {
	const head = `data: {"candidates":[{"content":{"parts":[{"text":"{\"a\":"}],"role":"model"},"index":0}]}` + "\n\n"
	for _, tt := range []struct {
		name, tail string
		want       string
	}{
		{"the API's", "event: error\ndata: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\n\n",
			"gemini gemini-test: 503 Service Unavailable (UNAVAILABLE): The model is overloaded."},
		{"OpenAI's", "event: error\ndata: {\"error\":{\"message\":\"Rate limit reached\",\"code\":\"rate_limit_exceeded\"}}\n\n",
			"gemini gemini-test: Rate limit reached"},
		{"message at the top", "event: error\ndata: {\"message\":\"model is loading\"}\n\n",
			"gemini gemini-test: model is loading"},
		{"plain text", "event: error\ndata: upstream connect error\n\n",
			"gemini gemini-test: upstream connect error"},
		{"no message", "event: error\ndata:\n\n", "gemini gemini-test: an error event without a message"},
		{"bare line as text", "{\"error\":\"upstream timed out\"}\n",
			"gemini gemini-test: upstream timed out"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, head+tt.tail)
			}))
			defer srv.Close()
			p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
			if err != nil {
				t.Fatal(err)
			}
			got, err := provider.Collect(p.Generate(t.Context(), &provider.Request{Stream: true}))
			if len(got.Texts) != 1 || got.Texts[0] != `{"a":` {
				t.Errorf("texts %q, want the text before the error", got.Texts)
			}
			if _, ok := errors.AsType[*provider.Error](err); !ok || err.Error() != tt.want {
				t.Errorf("error %v, want a *provider.Error %q", err, tt.want)
			}
		})
	}
}
