// Package limittest runs the same timeout, cap and retry tests against
// every adapter, each speaking its provider's wire format.
package limittest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/memhttp"
)

// Limits are the settings of an adapter's Config that the tests vary; a
// zero field is the adapter's default.
type Limits struct {
	FirstByte, Idle time.Duration
	MaxAnswerBytes  int64
}

// Wire describes an adapter and what its provider's server sends.
type Wire struct {
	// Name is the provider's name in errors.
	Name string
	// Model is the model New configures.
	Model string
	// New returns the adapter, talking to baseURL through hc.
	New   func(t *testing.T, hc *http.Client, baseURL string, l Limits) provider.Provider
	Start string // what a stream sends before its first piece of text
	// Piece is the event that streams text.
	Piece func(text string) string
	// End finishes a stream.
	End string
	// Body is a whole non-streamed answer whose text is text.
	Body func(text string) string
	// RateLimit is the body of a 429.
	RateLimit string
}

const memURL = "http://provider.test"

// Run runs the tests for w.
func Run(t *testing.T, w Wire) {
	t.Run("Timeouts", func(t *testing.T) { timeouts(t, w) })
	t.Run("BreakOut", func(t *testing.T) { breakOut(t, w) })
	t.Run("SlowConsumer", func(t *testing.T) { slowConsumer(t, w) })
	t.Run("RetryAfterCapped", func(t *testing.T) { retryAfterCapped(t, w) })
	t.Run("ResetBeforeWriting", func(t *testing.T) { resetBeforeWriting(t, w) })
	t.Run("FailAfterFirstChunk", func(t *testing.T) { failAfterFirstChunk(t, w) })
	t.Run("BodyCut", func(t *testing.T) { bodyCut(t, w) })
	t.Run("HTMLPage", func(t *testing.T) { htmlPage(t, w) })
	t.Run("HTMLErrorPage", func(t *testing.T) { htmlErrorPage(t, w) })
	t.Run("ErrorNamesModel", func(t *testing.T) { errorNamesModel(t, w) })
	t.Run("ErrorInStream", func(t *testing.T) { errorInStream(t, w) })
}

func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

func write(w http.ResponseWriter, s string) error {
	_, err := w.Write([]byte(s))
	if f, ok := w.(http.Flusher); ok && err == nil {
		f.Flush()
	}
	return err
}

func timeouts(t *testing.T, w Wire) {
	const piece = 4 << 10
	long := strings.Repeat("a", piece)
	for _, tt := range []struct {
		name        string
		limits      Limits
		stream      bool
		handler     http.HandlerFunc
		wantText    string
		wantErr     error
		wantElapsed time.Duration
	}{
		{
			name:   "headers then nothing",
			limits: Limits{FirstByte: 60 * time.Second},
			stream: true,
			handler: func(rw http.ResponseWriter, r *http.Request) {
				sse(rw)
				rw.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			wantErr:     &provider.TimeoutError{Provider: w.Name, Model: w.Model, Phase: provider.PhaseFirstByte, After: 60 * time.Second},
			wantElapsed: 60 * time.Second,
		},
		{
			name:   "a chunk then a stall",
			limits: Limits{Idle: 30 * time.Second},
			stream: true,
			handler: func(rw http.ResponseWriter, r *http.Request) {
				sse(rw)
				write(rw, w.Start+w.Piece("hi"))
				<-r.Context().Done()
			},
			wantText:    "hi",
			wantErr:     &provider.TimeoutError{Provider: w.Name, Model: w.Model, Phase: provider.PhaseIdle, After: 30 * time.Second},
			wantElapsed: 30 * time.Second,
		},
		{
			name:   "a stream without end hits the default cap",
			stream: true,
			handler: func(rw http.ResponseWriter, r *http.Request) {
				sse(rw)
				if write(rw, w.Start) != nil {
					return
				}
				for write(rw, w.Piece(long)) == nil {
				}
			},
			wantText: strings.Repeat(long, 8<<20/piece),
			wantErr:  &provider.LimitError{Provider: w.Name, Model: w.Model, Limit: 8 << 20},
		},
		{
			name:   "a body past the cap",
			limits: Limits{MaxAnswerBytes: 1 << 20},
			handler: func(rw http.ResponseWriter, r *http.Request) {
				rw.Header().Set("Content-Type", "application/json")
				write(rw, w.Body(strings.Repeat(long, 2<<20/piece)))
			},
			wantErr: &provider.LimitError{Provider: w.Name, Model: w.Model, Limit: 1 << 20},
		},
		{
			name:   "a stream within the limits",
			limits: Limits{FirstByte: time.Minute, Idle: time.Second},
			stream: true,
			handler: func(rw http.ResponseWriter, r *http.Request) {
				sse(rw)
				time.Sleep(59 * time.Second) // the fake clock's
				write(rw, w.Start+w.Piece("a"))
				time.Sleep(999 * time.Millisecond)
				write(rw, w.Piece("b"))
				write(rw, w.End)
			},
			wantText:    "ab",
			wantElapsed: 59*time.Second + 999*time.Millisecond,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := w.New(t, &http.Client{Transport: memhttp.Transport{Handler: tt.handler}}, memURL, tt.limits)
				start := time.Now()
				res, err := provider.Collect(p.Generate(t.Context(), &provider.Request{
					Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}},
					Stream:   tt.stream,
				}))
				elapsed := time.Since(start)
				if diff := cmp.Diff(tt.wantErr, err); diff != "" {
					t.Errorf("error (-want +got):\n%s\ngot %v", diff, err)
				}
				if tt.wantErr != nil && err != nil && err.Error() != tt.wantErr.Error() {
					t.Errorf("error text %q, want %q", err, tt.wantErr)
				}
				if got := strings.Join(res.Texts, ""); got != tt.wantText {
					t.Errorf("text of %d bytes, want %d", len(got), len(tt.wantText))
				}
				if elapsed != tt.wantElapsed {
					t.Errorf("took %v, want %v", elapsed, tt.wantElapsed)
				}
			})
		})
	}
}

// slowConsumer checks that the idle timeout bounds the server's
// silence, not the consumer's: a consumer that takes longer than it over
// each chunk, while the server has sent the rest, gets the whole answer.
func slowConsumer(t *testing.T, w Wire) {
	synctest.Test(t, func(t *testing.T) {
		h := func(rw http.ResponseWriter, r *http.Request) {
			sse(rw)
			write(rw, w.Start+w.Piece("a"))
			time.Sleep(time.Second)
			write(rw, w.Piece("b"))
			write(rw, w.End)
		}
		p := w.New(t, &http.Client{Transport: memhttp.Transport{Handler: http.HandlerFunc(h)}}, memURL, Limits{Idle: 30 * time.Second})
		var text strings.Builder
		for c, err := range p.Generate(t.Context(), &provider.Request{Stream: true}) {
			if err != nil {
				t.Fatalf("after %q: %v", text.String(), err)
			}
			text.WriteString(c.Text)
			time.Sleep(45 * time.Second) // the fake clock's: the consumer's work
		}
		if text.String() != "ab" {
			t.Errorf("text %q, want \"ab\"", text.String())
		}
	})
}

// breakOut checks that a consumer that stops early ends the request: the
// handler sees its context end, and no goroutine is left behind (the
// bubble would report a deadlock).
func breakOut(t *testing.T, w Wire) {
	synctest.Test(t, func(t *testing.T) {
		var ended atomic.Bool
		h := func(rw http.ResponseWriter, r *http.Request) {
			sse(rw)
			write(rw, w.Start+w.Piece("hi"))
			<-r.Context().Done()
			ended.Store(true)
		}
		p := w.New(t, &http.Client{Transport: memhttp.Transport{Handler: http.HandlerFunc(h)}}, memURL, Limits{Idle: -1})
		for c, err := range p.Generate(t.Context(), &provider.Request{Stream: true}) {
			if err != nil || c.Text != "hi" {
				t.Fatalf("got %+v, %v", c, err)
			}
			break
		}
		synctest.Wait()
		if !ended.Load() {
			t.Error("the request outlived the stream")
		}
	})
}

// retryAfterCapped checks on the fake clock that provider.Retry waits the
// whole Retry-After of a rate limit that resets in a minute, longer than
// its backoff's Max, and returns at once the 429 of one that resets in an
// hour, past its MaxAfter, rather than retrying before the reset.
func retryAfterCapped(t *testing.T, w Wire) {
	for _, tt := range []struct {
		name       string
		after      string
		wantWait   time.Duration
		wantCalls  int32
		wantStatus int // of the error; 0 for none
	}{
		{"a minute", "60", time.Minute, 2, 0},
		{"an hour", "3600", 0, 1, http.StatusTooManyRequests},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				h := func(rw http.ResponseWriter, r *http.Request) {
					if calls.Add(1) == 1 {
						rw.Header().Set("Content-Type", "application/json")
						rw.Header().Set("Retry-After", tt.after)
						rw.WriteHeader(http.StatusTooManyRequests)
						write(rw, w.RateLimit)
						return
					}
					sse(rw)
					write(rw, w.Start+w.Piece("ok")+w.End)
				}
				p := w.New(t, &http.Client{Transport: memhttp.Transport{Handler: http.HandlerFunc(h)}}, memURL, Limits{})
				start := time.Now()
				res, err := provider.Collect(provider.Retry(p, provider.RetryConfig{}).Generate(t.Context(), &provider.Request{Stream: true}))
				if got := time.Since(start); got != tt.wantWait {
					t.Errorf("waited %v, want %v", got, tt.wantWait)
				}
				if got := calls.Load(); got != tt.wantCalls {
					t.Errorf("%d calls, want %d", got, tt.wantCalls)
				}
				if tt.wantStatus == 0 {
					if err != nil {
						t.Fatal(err)
					}
					if got := strings.Join(res.Texts, ""); got != "ok" {
						t.Errorf("text %q, want \"ok\"", got)
					}
					return
				}
				pe, ok := errors.AsType[*provider.Error](err)
				if !ok || pe.Status != tt.wantStatus || pe.RetryAfter != time.Hour {
					t.Errorf("error %v, want a %d that says to wait an hour", err, tt.wantStatus)
				}
			})
		})
	}
}

// retried wraps p in provider.Retry with a Sleep that only counts.
func retried(p provider.Provider, sleeps *int) provider.Provider {
	return provider.Retry(p, provider.RetryConfig{Sleep: func(context.Context, time.Duration) error {
		*sleeps++
		return nil
	}})
}

func resetBeforeWriting(t *testing.T, w Wire) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			conn, _, err := rw.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.(*net.TCPConn).SetLinger(0) // close with a RST
			conn.Close()
			return
		}
		sse(rw)
		write(rw, w.Start+w.Piece("ok")+w.End)
	}))
	defer srv.Close()
	p := w.New(t, srv.Client(), srv.URL, Limits{})
	sleeps := 0
	res, err := provider.Collect(retried(p, &sleeps).Generate(t.Context(), &provider.Request{Stream: true}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Texts, ""); got != "ok" || calls.Load() != 2 || sleeps != 1 {
		t.Errorf("text %q after %d calls and %d waits, want \"ok\" after 2 and 1", got, calls.Load(), sleeps)
	}
}

func failAfterFirstChunk(t *testing.T, w Wire) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		sse(rw)
		write(rw, w.Start+w.Piece("hi"))
		panic(http.ErrAbortHandler) // the connection closes mid-stream
	}))
	defer srv.Close()
	p := w.New(t, srv.Client(), srv.URL, Limits{})
	sleeps := 0
	res, err := provider.Collect(retried(p, &sleeps).Generate(t.Context(), &provider.Request{Stream: true}))
	if !errors.Is(err, provider.ErrTruncated) || errors.Is(err, provider.ErrNoAnswer) {
		t.Errorf("error %v, want provider.ErrTruncated only", err)
	}
	if got := strings.Join(res.Texts, ""); got != "hi" || calls.Load() != 1 || sleeps != 0 {
		t.Errorf("text %q after %d calls and %d waits, want \"hi\" after 1 and 0", got, calls.Load(), sleeps)
	}
}

// bodyCut checks that the body of an answer that does not stream, cut
// half-way, is reported as cut, and not retried: its first byte arrived.
func bodyCut(t *testing.T, w Wire) {
	var calls atomic.Int32
	body := w.Body(`{"answer":"` + strings.Repeat("a", 1000) + `"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
		write(rw, body[:len(body)/2])
		panic(http.ErrAbortHandler) // the connection closes mid-body
	}))
	defer srv.Close()
	p := w.New(t, srv.Client(), srv.URL, Limits{})
	sleeps := 0
	_, err := provider.Collect(retried(p, &sleeps).Generate(t.Context(), &provider.Request{}))
	if !errors.Is(err, provider.ErrTruncated) || errors.Is(err, provider.ErrNoAnswer) {
		t.Errorf("error %v, want provider.ErrTruncated only", err)
	}
	if calls.Load() != 1 || sleeps != 0 {
		t.Errorf("%d calls and %d waits, want 1 and 0", calls.Load(), sleeps)
	}
}

// htmlPage checks that an HTML page answered with a 200, as a proxy's
// login page or a web app at a base URL that is not the API's, is a
// *provider.Error that says so, names the URL and quotes the page, and is
// not retried: asked again, the same page comes back.
func htmlPage(t *testing.T, w Wire) {
	const page = "<!doctype html>\n<html><head><title>Sign in - Corporate Proxy</title></head><body>Please sign in.</body></html>\n"
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			var calls atomic.Int32
			var path string
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				path = r.URL.Path
				rw.Header().Set("Content-Type", "text/html; charset=utf-8")
				write(rw, page)
			}))
			defer srv.Close()
			p := w.New(t, srv.Client(), srv.URL, Limits{})
			sleeps := 0
			_, err := provider.Collect(retried(p, &sleeps).Generate(t.Context(), &provider.Request{Stream: stream}))
			pe, ok := errors.AsType[*provider.Error](err)
			if !ok {
				t.Fatalf("error %v, want a *provider.Error", err)
			}
			if pe.Provider != w.Name || pe.Status != http.StatusOK || pe.Temporary() {
				t.Errorf("error %q of %q, status %d, temporary %v; want one of %q, 200, not temporary", err, pe.Provider, pe.Status, pe.Temporary(), w.Name)
			}
			for _, want := range []string{"HTML page", srv.URL + path, "Sign in - Corporate Proxy"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if calls.Load() != 1 || sleeps != 0 {
				t.Errorf("%d calls and %d waits, want 1 and 0", calls.Load(), sleeps)
			}
		})
	}
}

// htmlErrorPage checks that a proxy's error page (a CDN's 502, kilobytes
// of markup) is a *provider.Error of its status and Retry-After that
// names the page by its title rather than quoting it whole, and is
// retried as the status says.
func htmlErrorPage(t *testing.T, w Wire) {
	page := "<!DOCTYPE html>\n<html><head><title>api.example.com | 502: Bad gateway</title><style>" +
		strings.Repeat("body{margin:0;padding:0}", 400) + "</style></head><body><h1>Bad gateway</h1></body></html>"
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			rw.Header().Set("Content-Type", "text/html; charset=UTF-8")
			rw.Header().Set("Retry-After", "5")
			rw.WriteHeader(http.StatusBadGateway)
			write(rw, page)
			return
		}
		sse(rw)
		write(rw, w.Start+w.Piece("ok")+w.End)
	}))
	defer srv.Close()
	p := w.New(t, srv.Client(), srv.URL, Limits{})
	var waits []time.Duration
	r := provider.Retry(p, provider.RetryConfig{Attempts: -1})
	_, err := provider.Collect(r.Generate(t.Context(), &provider.Request{Stream: true}))
	pe, ok := errors.AsType[*provider.Error](err)
	if !ok {
		t.Fatalf("error %v, want a *provider.Error", err)
	}
	if pe.Provider != w.Name || pe.Status != http.StatusBadGateway || pe.RetryAfter != 5*time.Second || !pe.Temporary() {
		t.Errorf("error %q of %q, status %d, Retry-After %v; want one of %q, 502, 5s", err, pe.Provider, pe.Status, pe.RetryAfter, w.Name)
	}
	if !strings.Contains(err.Error(), `"api.example.com | 502: Bad gateway"`) || len(err.Error()) > 600 {
		t.Errorf("error %q (%d bytes), want the page's title, not the page", err, len(err.Error()))
	}
	calls.Store(0)
	res, err := provider.Collect(provider.Retry(p, provider.RetryConfig{Sleep: func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}}).Generate(t.Context(), &provider.Request{Stream: true}))
	if err != nil || strings.Join(res.Texts, "") != "ok" || !cmp.Equal(waits, []time.Duration{5 * time.Second}) {
		t.Errorf("retried: %v, %q after waits %v; want \"ok\"", err, res.Texts, waits)
	}
}

// errorNamesModel checks that an error response says which model the
// request asked for, with the provider: a 429 of one model says nothing
// of another's limits.
func errorNamesModel(t *testing.T, w Wire) {
	for _, stream := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusTooManyRequests)
			write(rw, w.RateLimit)
		}))
		p := w.New(t, srv.Client(), srv.URL, Limits{})
		_, err := provider.Collect(p.Generate(t.Context(), &provider.Request{Stream: stream}))
		srv.Close()
		pe, ok := errors.AsType[*provider.Error](err)
		if !ok || pe.Model != w.Model || !strings.HasPrefix(err.Error(), w.Name+" "+w.Model+": 429 ") {
			t.Errorf("stream=%v: got %q, want a *provider.Error of %s %s", stream, err, w.Name, w.Model)
		}
	}
}

// errorInStream checks that an error a server writes into a 200 stream
// ends it with that error, which names the provider, the model and the
// server's message, after the text that came before: an error event, and
// the error body written as a line of its own, without "data:", as some
// compatible servers and proxies do. A stream without it would end cut,
// or with nothing, and the server's message lost.
func errorInStream(t *testing.T, w Wire) {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(w.RateLimit), &body); err != nil || body.Error.Message == "" {
		t.Fatalf("Wire.RateLimit %s has no error.message", w.RateLimit)
	}
	for _, tt := range []struct {
		name     string
		stream   string
		wantText string
	}{
		{"raw line after text", w.Start + w.Piece("hi") + w.RateLimit + "\n", "hi"},
		{"raw line first", w.RateLimit + "\n", ""},
		{"raw line then more", w.Start + w.Piece("hi") + w.RateLimit + "\n\n" + w.Piece("ignored") + w.End, "hi"},
		{"error event", w.Start + w.Piece("hi") + "event: error\ndata: " + w.RateLimit + "\n\n", "hi"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				sse(rw)
				write(rw, tt.stream)
			}))
			defer srv.Close()
			p := w.New(t, srv.Client(), srv.URL, Limits{})
			res, err := provider.Collect(p.Generate(t.Context(), &provider.Request{Stream: true}))
			if got := strings.Join(res.Texts, ""); got != tt.wantText {
				t.Errorf("text %q, want %q", got, tt.wantText)
			}
			pe, ok := errors.AsType[*provider.Error](err)
			if !ok || errors.Is(err, provider.ErrTruncated) {
				t.Fatalf("error %v, want a *provider.Error", err)
			}
			want := w.Name + " " + w.Model + ": 429 Too Many Requests"
			if pe.Status != http.StatusTooManyRequests || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), body.Error.Message) {
				t.Errorf("error %q, status %d; want 429, %q and the message %q", err, pe.Status, want, body.Error.Message)
			}
		})
	}
}
