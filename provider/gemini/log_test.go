package gemini

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/memhttp"
)

// stdLog captures what the standard logger writes until the test ends.
// The logger is the process's: tests that use it do not run in parallel.
func stdLog(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	old := log.Writer()
	log.SetOutput(&buf)
	t.Cleanup(func() { log.SetOutput(old) })
	return &buf
}

// TestBrokenStreamNoStdLog: a stream that breaks, or goes quiet past the
// idle timeout, ends with its error and writes nothing to the standard
// logger, which the SDK prints such failures to: the library logs
// through log/slog only, and a program's own log must not fill with a
// dependency's lines.
func TestBrokenStreamNoStdLog(t *testing.T) {
	const piece = `data: {"candidates":[{"content":{"parts":[{"text":"{\"a\":"}],"role":"model"},"index":0}]}` + "\n\n"
	t.Run("connection cut", func(t *testing.T) {
		logged := stdLog(t)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, piece)
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
		res, err := provider.Collect(p.Generate(t.Context(), &provider.Request{Stream: true}))
		if !errors.Is(err, provider.ErrTruncated) || len(res.Texts) != 1 || res.Texts[0] != `{"a":` {
			t.Errorf("got %q, %v; want the text and an error wrapping provider.ErrTruncated", res.Texts, err)
		}
		if logged.Len() > 0 {
			t.Errorf("the standard logger got %q", logged)
		}
	})
	t.Run("idle timeout", func(t *testing.T) {
		logged := stdLog(t)
		synctest.Test(t, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, piece)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			})
			p, err := New(Config{APIKey: testKey, BaseURL: "http://provider.test", Model: testModel,
				HTTPClient: &http.Client{Transport: memhttp.Transport{Handler: h}}, IdleTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			_, err = provider.Collect(p.Generate(t.Context(), &provider.Request{Stream: true}))
			if te, ok := errors.AsType[*provider.TimeoutError](err); !ok || te.Phase != provider.PhaseIdle || te.Model != testModel {
				t.Errorf("error %v, want the idle timeout of %s", err, testModel)
			}
		})
		if logged.Len() > 0 {
			t.Errorf("the standard logger got %q", logged)
		}
	})
}
