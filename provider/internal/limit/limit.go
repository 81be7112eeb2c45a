// Package limit bounds the HTTP exchanges of the provider adapters: the
// connect, first-byte and idle timeouts, and the size of an answer. It
// turns what it enforces into provider.TimeoutError, provider.LimitError
// and errors marked provider.ErrNoAnswer.
package limit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/augceo/agent/internal/runes"
	"github.com/augceo/agent/provider"
)

// Config bounds one adapter's exchanges. A zero or negative field is no
// limit; use [Or] to resolve an adapter's Config field against its default.
type Config struct {
	Provider  string        // names the provider in errors
	Connect   time.Duration // dialing and the TLS handshake
	FirstByte time.Duration // from the connection to the first byte of the body
	Idle      time.Duration // a read of the body waiting, once its first byte came
	// MaxBody caps the body of a response that is not an SSE stream;
	// streams are counted by a [Budget] instead.
	MaxBody int64
}

// Or returns v, def when v is 0, and 0 (no limit) when v is negative.
func Or[T ~int64 | ~int](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Client returns a copy of c (nil means a client with
// http.DefaultTransport) whose transport enforces cfg. c is not changed.
func Client(c *http.Client, cfg Config) *http.Client {
	var cc http.Client
	if c != nil {
		cc = *c
	}
	base := cc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc.Transport = &transport{base: base, cfg: cfg}
	return &cc
}

// Own returns the *provider.TimeoutError, *provider.LimitError or
// *provider.Error (an HTML page, see htmlPage) that the transport put in
// err's chain, or nil: the adapters yield it as is, without the SDK's
// wrapping.
func Own(err error) error {
	if e, ok := errors.AsType[*provider.TimeoutError](err); ok {
		return e
	}
	if e, ok := errors.AsType[*provider.LimitError](err); ok {
		return e
	}
	if e, ok := errors.AsType[*pageError](err); ok {
		return e.err
	}
	return nil
}

// pageError carries the *provider.Error of an HTML page through the
// SDKs, which wrap what a transport returns; only Own unwraps it, so
// that the adapters' own checks never take it for an API error.
type pageError struct{ err *provider.Error }

func (e *pageError) Error() string { return e.err.Error() }

// maxPage bounds how much of the text of an HTML page an error quotes.
const maxPage = 200

// htmlPage returns the error for a response that is an HTML page, and
// closes its body. No API answers with one; a proxy does (its login
// page, a CDN's 502 of kilobytes of markup), and so does a web app at a
// base URL that is not the API's, which answers any path with its page.
// The error has the response's status and Retry-After, so that a
// gateway's 502 is retried and a login page's 200 is not; it names the
// URL and the page's title, or quotes the beginning of a page without
// one.
func (t *transport) htmlPage(req *http.Request, res *http.Response) error {
	page, _ := io.ReadAll(io.LimitReader(res.Body, 16<<10))
	res.Body.Close()
	what := "an HTML page"
	if m := htmlTitle.FindSubmatch(page); m != nil {
		what += fmt.Sprintf(" titled %q", strings.Join(strings.Fields(html.UnescapeString(string(m[1]))), " "))
	}
	// What a browser would show of the rest, bounded.
	text := htmlHidden.ReplaceAll(page, nil)
	text = htmlTag.ReplaceAll(text, []byte(" "))
	if shown := strings.Join(strings.Fields(html.UnescapeString(string(text))), " "); shown != "" {
		what += fmt.Sprintf(" (%s)", runes.Truncate(shown, maxPage))
	}
	u := *req.URL
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return &pageError{&provider.Error{
		Provider:   t.cfg.Provider,
		Status:     res.StatusCode,
		RetryAfter: provider.RetryAfter(res.Header),
		Err:        fmt.Errorf("%s answered %s, not the API's answer: a proxy's page, or a base URL that is not the API's?", u.String(), what),
	}}
}

// What htmlPage reads of a page: its title; the elements a browser does
// not show, with their content; and the tags of the others.
var (
	htmlTitle  = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	htmlHidden = regexp.MustCompile(`(?is)<(title|style|script|head)\b[^>]*>.*?</(title|style|script|head)>|<!--.*?-->`)
	htmlTag    = regexp.MustCompile(`(?s)<[^>]*>`)
)

type transport struct {
	base http.RoundTripper
	cfg  Config
}

// RoundTrip sends req with a context of its own, which a timer cancels
// when a phase runs out. The timer is stopped, and that context
// cancelled, when the body is closed or RoundTrip fails.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	parent := req.Context()
	ctx, cancel := context.WithCancelCause(parent)
	w := &watch{cfg: &t.cfg, cancel: cancel}
	context.AfterFunc(ctx, w.stop)
	w.mu.Lock()
	w.arm(provider.PhaseConnect, t.cfg.Connect)
	w.mu.Unlock()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { w.connected() },
	})
	res, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		if res != nil && res.Body != nil {
			res.Body.Close()
		}
		err = w.fail(parent, err)
		cancel(nil)
		return nil, err
	}
	// A transport that reports no connection (a test's) is connected once
	// it has the headers.
	w.connected()
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if mt == "text/html" {
		err := t.htmlPage(req, res)
		cancel(nil)
		return nil, err
	}
	b := &body{rc: res.Body, w: w, parent: parent, stream: mt == "text/event-stream"}
	if !b.stream {
		b.max = t.cfg.MaxBody
	}
	res.Body = b
	return res, nil
}

// watch is the timer of one exchange.
type watch struct {
	cfg    *Config
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	t     *time.Timer
	gen   uint64         // counts arm calls: a timer of an older one is stale
	cur   provider.Phase // the phase being timed
	done  bool           // the exchange ended; arm nothing more
	got   bool           // a byte of the body arrived
	fired error          // the *provider.TimeoutError, once a timer fired
}

// arm times phase ph for d (none when d ≤ 0). w.mu must be held.
func (w *watch) arm(ph provider.Phase, d time.Duration) {
	if w.t != nil {
		w.t.Stop()
		w.t = nil
	}
	w.gen++
	w.cur = ph
	if d <= 0 || w.done {
		return
	}
	gen := w.gen
	w.t = time.AfterFunc(d, func() { w.fire(gen, ph, d) })
}

// connected ends the connect phase, if it is still on, and starts timing
// the first byte.
func (w *watch) connected() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == provider.PhaseConnect && !w.done {
		w.arm(provider.PhaseFirstByte, w.cfg.FirstByte)
	}
}

func (w *watch) fire(gen uint64, ph provider.Phase, d time.Duration) {
	w.mu.Lock()
	if gen != w.gen || w.done {
		w.mu.Unlock()
		return
	}
	err := &provider.TimeoutError{Provider: w.cfg.Provider, Phase: ph, After: d}
	w.fired = err
	w.done = true
	w.t = nil
	w.mu.Unlock()
	w.cancel(err)
}

// stop disarms the timer for good.
func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	if w.t != nil {
		w.t.Stop()
		w.t = nil
	}
}

// fail turns an error of the exchange before the first byte of the body
// into the error to return: the timeout that caused it, the parent's
// error as is, or err marked provider.ErrNoAnswer. A certificate that
// does not verify is not marked: trying again will not help.
func (w *watch) fail(parent context.Context, err error) error {
	w.mu.Lock()
	fired := w.fired
	w.mu.Unlock()
	if fired != nil {
		return fired
	}
	if parent.Err() != nil || errors.Is(err, provider.ErrNoAnswer) {
		return err
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return err
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return err
	}
	return fmt.Errorf("%w: %w", provider.ErrNoAnswer, err)
}

// body times the reads of a response body and caps its size.
type body struct {
	rc     io.ReadCloser
	w      *watch
	parent context.Context
	stream bool  // an SSE stream, whose adapter tells a cut stream
	max    int64 // 0: no cap
	n      int64
}

func (b *body) Read(p []byte) (int, error) {
	w := b.w
	w.mu.Lock()
	if w.got && w.t == nil && !w.done {
		// The idle timeout bounds the server's silence: it runs while a
		// read waits, and not between reads, whose time is the
		// consumer's, however long it takes over a chunk.
		w.arm(provider.PhaseIdle, w.cfg.Idle)
	}
	w.mu.Unlock()
	n, err := b.rc.Read(p)
	w.mu.Lock()
	if w.fired != nil {
		fired := w.fired
		w.mu.Unlock()
		return 0, fired
	}
	b.n += int64(n)
	if b.max > 0 && b.n > b.max {
		w.mu.Unlock()
		lerr := &provider.LimitError{Provider: w.cfg.Provider, Limit: b.max}
		w.cancel(lerr)
		return 0, lerr
	}
	got := w.got
	if n > 0 {
		w.got = true
		w.arm(provider.PhaseIdle, 0) // stops the first-byte or idle timer until the next read
	}
	if err != nil && w.t != nil {
		w.t.Stop()
		w.t = nil
		w.done = true
	}
	w.mu.Unlock()
	switch {
	case err == nil || err == io.EOF:
	case !got && n == 0:
		err = w.fail(b.parent, err)
	case !b.stream && b.parent.Err() == nil:
		// A whole answer cut after its first byte.
		err = fmt.Errorf("%w: %w", provider.ErrTruncated, err)
	}
	return n, err
}

// Close closes the body and ends the exchange: the timer stops and the
// request's context is cancelled.
func (b *body) Close() error {
	err := b.rc.Close()
	b.w.cancel(nil)
	return err
}

// Budget counts the text of one answer against a cap. It is safe for
// concurrent use, so the requests of one call can share it.
type Budget struct {
	provider string
	max      int64
	n        atomic.Int64
}

// NewBudget returns a Budget of max bytes for the provider named; max ≤ 0
// means no cap.
func NewBudget(provider string, max int64) *Budget {
	return &Budget{provider: provider, max: max}
}

// Spend counts the Text and Thinking of c, and returns a
// *provider.LimitError once the total exceeds the cap.
func (b *Budget) Spend(c *provider.Chunk) error {
	if b.max <= 0 || c == nil {
		return nil
	}
	if b.n.Add(int64(len(c.Text)+len(c.Thinking))) > b.max {
		return &provider.LimitError{Provider: b.provider, Limit: b.max}
	}
	return nil
}
