// Package memhttp serves HTTP requests in memory, for tests that run in a
// testing/synctest bubble, where a real connection would keep the fake
// clock from advancing.
package memhttp

import (
	"context"
	"io"
	"net/http"
	"sync"
)

// Transport is an http.RoundTripper that serves each request with
// Handler on a goroutine of its own. The response body is a pipe the
// handler writes to; the headers go out at its first WriteHeader, Write
// or Flush, or when it returns. When the request's context ends, the body
// fails with the context's error and a handler blocked in Write returns an
// error; a handler that waits should watch r.Context().
type Transport struct {
	Handler http.Handler
}

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	pr, pw := io.Pipe()
	w := &writer{header: http.Header{}, pw: pw, sent: make(chan int, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer pw.Close()
		defer w.WriteHeader(http.StatusOK)
		if req.Body != nil {
			defer req.Body.Close()
		}
		t.Handler.ServeHTTP(w, req)
	}()
	select {
	case code := <-w.sent:
		stop := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
		return &http.Response{
			Status:     http.StatusText(code),
			StatusCode: code,
			Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:        w.out,
			Body:          &body{PipeReader: pr, stop: stop},
			ContentLength: -1,
			Request:       req,
		}, nil
	case <-ctx.Done():
		pr.CloseWithError(ctx.Err())
		<-done
		return nil, ctx.Err()
	}
}

type body struct {
	*io.PipeReader
	stop func() bool
}

func (b *body) Close() error {
	b.stop()
	return b.PipeReader.Close()
}

type writer struct {
	header http.Header // the handler's
	out    http.Header // a copy of header when it was sent
	pw     *io.PipeWriter
	once   sync.Once
	sent   chan int
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(code int) {
	w.once.Do(func() {
		w.out = w.header.Clone()
		w.sent <- code
	})
}

func (w *writer) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

func (w *writer) Flush() { w.WriteHeader(http.StatusOK) }
