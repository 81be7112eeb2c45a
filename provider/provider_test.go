package provider_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
)

// flaky fails with errs in turn, then answers.
func flaky(errs ...error) (provider.Provider, *int) {
	calls := 0
	return provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			calls++
			if calls <= len(errs) {
				yield(nil, errs[calls-1])
				return
			}
			yield(&provider.Chunk{Text: "ok", Done: true, Usage: &provider.Usage{Input: 1}}, nil)
		}
	}), &calls
}

func TestRetry(t *testing.T) {
	rate := &provider.Error{Provider: "x", Status: http.StatusTooManyRequests, RetryAfter: 7 * time.Second}
	server := &provider.Error{Provider: "x", Status: http.StatusBadGateway}
	bad := &provider.Error{Provider: "x", Status: http.StatusBadRequest}
	for _, tt := range []struct {
		name      string
		errs      []error
		attempts  int
		wantCalls int
		wantWaits []time.Duration
		wantErr   error
	}{
		{"rate limit honours Retry-After", []error{rate}, 0, 2, []time.Duration{7 * time.Second}, nil},
		{"server errors back off", []error{server, server}, 0, 3, []time.Duration{500 * time.Millisecond, time.Second}, nil},
		{"client errors are not retried", []error{bad}, 0, 1, nil, bad},
		{"other errors are not retried", []error{errors.New("boom")}, 0, 1, nil, nil},
		{"gives up after Attempts", []error{server, server, server}, 2, 3, []time.Duration{500 * time.Millisecond, time.Second}, server},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, calls := flaky(tt.errs...)
			var waits []time.Duration
			r := provider.Retry(p, provider.RetryConfig{Attempts: tt.attempts, Sleep: func(ctx context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			}})
			res, err := provider.Collect(r.Generate(context.Background(), &provider.Request{}))
			if *calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", *calls, tt.wantCalls)
			}
			if len(waits) != len(tt.wantWaits) {
				t.Fatalf("waits %v, want %v", waits, tt.wantWaits)
			}
			for i := range waits {
				if !backedOff(waits[i], tt.wantWaits[i], tt.errs[i] == rate) {
					t.Errorf("waits %v, want %v", waits, tt.wantWaits)
				}
			}
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("got %v, want %v", err, tt.wantErr)
			case tt.wantErr == nil && *calls > len(tt.errs) && (err != nil || res.Texts[0] != "ok"):
				t.Errorf("got %v %v, want ok", res, err)
			}
		})
	}
}

// backedOff reports whether Retry's wait got is right for want: the wait
// the provider asked for exactly, or a backoff of want drawn from its
// upper half.
func backedOff(got, want time.Duration, asked bool) bool {
	if asked {
		return got == want
	}
	return got >= want/2 && got <= want
}

// TestRetryJitter: runs failing together do not all try again at the
// same instant.
func TestRetryJitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 20 {
		p, _ := flaky(&provider.Error{Provider: "x", Status: http.StatusBadGateway})
		r := provider.Retry(p, provider.RetryConfig{Sleep: func(ctx context.Context, d time.Duration) error {
			if d < 250*time.Millisecond || d > 500*time.Millisecond {
				t.Errorf("wait %v, want 250ms–500ms", d)
			}
			seen[d] = true
			return nil
		}})
		if _, err := provider.Collect(r.Generate(t.Context(), &provider.Request{})); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) < 10 {
		t.Errorf("20 runs waited only %d different times: %v", len(seen), seen)
	}
}

func TestRetryNeverAfterAChunk(t *testing.T) {
	calls := 0
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			calls++
			if !yield(&provider.Chunk{Text: "part"}, nil) {
				return
			}
			yield(nil, &provider.Error{Status: 500})
		}
	})
	res, err := provider.Collect(provider.Retry(p, provider.RetryConfig{Sleep: func(context.Context, time.Duration) error { return nil }}).Generate(context.Background(), &provider.Request{}))
	if calls != 1 || err == nil || res.Texts[0] != "part" {
		t.Errorf("calls %d, err %v, texts %q: want one call, the error and the partial text", calls, err, res.Texts)
	}
}

func TestRetryStopsOnCancel(t *testing.T) {
	p, _ := flaky(&provider.Error{Status: 503}, &provider.Error{Status: 503})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := provider.Collect(provider.Retry(p, provider.RetryConfig{}).Generate(ctx, &provider.Request{}))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 10, 26, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		"1.5":                           1500 * time.Millisecond,
		"Sun, 26 Oct 2025 12:00:30 GMT": 30 * time.Second,
		"soon":                          0,
		// Longer than a Duration holds: as long as one can, so that
		// Retry gives up rather than waits the default backoff.
		"99999999999": math.MaxInt64,
	} {
		if got := provider.ParseRetryAfter(in, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestScripted(t *testing.T) {
	p := scripted.New(
		scripted.Response{Chunks: []string{`{"out`, `put":1}`}, Thinking: "hmm", Usage: provider.Usage{Input: 3, Output: 2}},
		scripted.Response{Solutions: []string{`{"output":1}`, `{"output":2}`}},
	)
	r, err := provider.Collect(p.Generate(context.Background(), &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "q"}}}))
	if err != nil || r.Texts[0] != `{"output":1}` || r.Thinking[0] != "hmm" || r.Usage.Input != 3 {
		t.Errorf("first: %+v %v", r, err)
	}
	r, err = provider.Collect(p.Generate(context.Background(), &provider.Request{N: 2}))
	if err != nil || len(r.Texts) != 2 || r.Texts[1] != `{"output":2}` {
		t.Errorf("second: %+v %v", r, err)
	}
	if _, err := provider.Collect(p.Generate(context.Background(), &provider.Request{})); !errors.Is(err, scripted.ErrExhausted) {
		t.Errorf("third: %v, want ErrExhausted", err)
	}
	if reqs := p.Requests(); len(reqs) != 3 || reqs[0].Messages[0].Text != "q" {
		t.Errorf("requests recorded: %+v", reqs)
	}
}

func TestCollectInterleaved(t *testing.T) {
	seq := func(yield func(*provider.Chunk, error) bool) {
		for _, c := range []*provider.Chunk{{Index: 0, Text: "a"}, {Index: 1, Text: "x"}, {Index: 0, Text: "b"}, {Index: 2, Text: "z"}, {Index: 1, Text: "y", Done: true}} {
			if !yield(c, nil) {
				return
			}
		}
	}
	r, err := provider.Collect(seq)
	if err != nil || len(r.Texts) != 3 || r.Texts[0] != "ab" || r.Texts[1] != "xy" || r.Texts[2] != "z" {
		t.Errorf("got %q, %v", r.Texts, err)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	for _, tt := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"9"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"99999999999"}}, math.MaxInt64},
		{http.Header{"Retry-After-Ms": {"1e300"}}, math.MaxInt64},
		{http.Header{"Retry-After": {"Sun, 26 Oct 2025 12:00:30 GMT"}, "Date": {"Sun, 26 Oct 2025 12:00:00 GMT"}}, 30 * time.Second},
		{http.Header{"Retry-After": {"Sun, 26 Oct 2025 12:00:30 GMT"}}, 0},
	} {
		if got := provider.RetryAfter(tt.h); got != tt.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tt.h, got, tt.want)
		}
	}
}

func TestCacheHitRate(t *testing.T) {
	for _, tt := range []struct {
		u    provider.Usage
		want float64
	}{
		{provider.Usage{}, 0},
		{provider.Usage{Input: 100, Output: 7}, 0},
		{provider.Usage{Input: 10, CacheRead: 80, CacheWrite: 10, Output: 5}, 0.8},
		{provider.Usage{CacheRead: 50}, 1},
	} {
		if got := tt.u.CacheHitRate(); got != tt.want {
			t.Errorf("%+v: CacheHitRate() = %v, want %v", tt.u, got, tt.want)
		}
	}
}

func TestRetryRules(t *testing.T) {
	for _, tt := range []struct {
		name      string
		err       error
		wantCalls int
		wantWaits []time.Duration
	}{
		{"Retry-After past MaxAfter fails at once", &provider.Error{Provider: "x", Status: 429, RetryAfter: time.Hour}, 1, nil},
		{"Retry-After longer than Max is waited for", &provider.Error{Provider: "x", Status: 429, RetryAfter: time.Minute}, 2, []time.Duration{time.Minute}},
		{"Retry-After of MaxAfter is waited for", &provider.Error{Provider: "x", Status: 429, RetryAfter: provider.DefaultRetryMaxAfter}, 2, []time.Duration{provider.DefaultRetryMaxAfter}},
		{"connect timeout", &provider.TimeoutError{Provider: "x", Phase: provider.PhaseConnect, After: time.Second}, 2, []time.Duration{500 * time.Millisecond}},
		{"first-byte timeout", &provider.TimeoutError{Provider: "x", Phase: provider.PhaseFirstByte, After: time.Second}, 2, []time.Duration{500 * time.Millisecond}},
		{"idle timeout is not retried", &provider.TimeoutError{Provider: "x", Phase: provider.PhaseIdle, After: time.Second}, 1, nil},
		{"no answer", fmt.Errorf("x: %w: connection reset", provider.ErrNoAnswer), 2, []time.Duration{500 * time.Millisecond}},
		{"cap is not retried", &provider.LimitError{Provider: "x", Limit: 1}, 1, nil},
		{"a quota used up is not retried", &provider.Error{Provider: "openai", Status: 429, Code: "insufficient_quota"}, 1, nil},
		{"a schema the server cannot use is not retried", &provider.Error{Provider: "ollama", Status: 500, Code: provider.CodeInvalidSchema}, 1, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, calls := flaky(tt.err)
			var waits []time.Duration
			r := provider.Retry(p, provider.RetryConfig{Sleep: func(ctx context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			}})
			_, err := provider.Collect(r.Generate(context.Background(), &provider.Request{}))
			_, asked := tt.err.(*provider.Error)
			if *calls != tt.wantCalls || len(waits) != len(tt.wantWaits) || len(waits) == 1 && !backedOff(waits[0], tt.wantWaits[0], asked) {
				t.Errorf("%d calls, waits %v; want %d, %v", *calls, waits, tt.wantCalls, tt.wantWaits)
			}
			if (err != nil) != (tt.wantCalls == 1) {
				t.Errorf("error %v", err)
			}
		})
	}
}

func TestTimeoutError(t *testing.T) {
	for _, tt := range []struct {
		err  *provider.TimeoutError
		want string
	}{
		{&provider.TimeoutError{Provider: "openai", Phase: provider.PhaseConnect, After: 10 * time.Second}, "openai: no connection within 10s"},
		{&provider.TimeoutError{Provider: "openai", Phase: provider.PhaseFirstByte, After: time.Minute}, "openai: no first byte within 1m0s"},
		{&provider.TimeoutError{Provider: "anthropic", Phase: provider.PhaseIdle, After: 30 * time.Second}, "anthropic: stream idle for 30s"},
		{&provider.TimeoutError{Provider: "openai", Model: "gpt-5", Phase: provider.PhaseFirstByte, After: time.Minute}, "openai gpt-5: no first byte within 1m0s"},
		{&provider.TimeoutError{Provider: "anthropic", Model: "claude-sonnet-4-6", Phase: provider.PhaseIdle, After: 30 * time.Second}, "anthropic claude-sonnet-4-6: stream idle for 30s"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
		if !errors.Is(tt.err, provider.ErrTimeout) {
			t.Errorf("%v does not wrap ErrTimeout", tt.err)
		}
	}
	if got, want := (&provider.LimitError{Provider: "gemini", Limit: 8 << 20}).Error(), "gemini: answer exceeds the cap of 8388608 bytes"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := (&provider.LimitError{Provider: "gemini", Model: "gemini-2.5-flash", Limit: 8 << 20}).Error(), "gemini gemini-2.5-flash: answer exceeds the cap of 8388608 bytes"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestErrorText(t *testing.T) {
	for _, tt := range []struct {
		err  *provider.Error
		want string
	}{
		{&provider.Error{Provider: "openai", Status: 503, Code: "server_error", Err: errors.New("try later")}, "openai: 503 Service Unavailable (server_error): try later"},
		// Anthropic's overload has no text in net/http.
		{&provider.Error{Provider: "anthropic", Status: 529, Code: "overloaded_error", Err: errors.New("Overloaded")}, "anthropic: 529 Overloaded (overloaded_error): Overloaded"},
		{&provider.Error{Provider: "x", Status: 599, Err: errors.New("odd")}, "x: 599: odd"},
		{&provider.Error{Provider: "x", Err: errors.New("connection refused")}, "x: connection refused"},
		{&provider.Error{Provider: "gemini", Model: "gemini-2.5-flash", Status: 503, Code: "UNAVAILABLE", Err: errors.New("The model is overloaded.")},
			"gemini gemini-2.5-flash: 503 Service Unavailable (UNAVAILABLE): The model is overloaded."},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// TestRetryCancelledWhileWaiting: a context cancelled while Retry waits
// for the wait the provider asked ends the stream at once, with an error
// that is the cancellation and still the provider's error, saying that
// the wait was cut; the usage the failed attempt said came before it.
func TestRetryCancelledWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
			return func(yield func(*provider.Chunk, error) bool) {
				calls++
				if yield(&provider.Chunk{Usage: &provider.Usage{Input: 12}}, nil) {
					yield(nil, &provider.Error{Provider: "x", Status: http.StatusServiceUnavailable, RetryAfter: 10 * time.Second, Err: errors.New("busy")})
				}
			}
		})
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(3*time.Second, cancel)
		start := time.Now()
		res, err := provider.Collect(provider.Retry(p, provider.RetryConfig{}).Generate(ctx, &provider.Request{}))
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("ended after %v, want 3s", got)
		}
		if pe, ok := errors.AsType[*provider.Error](err); !ok || pe.Status != http.StatusServiceUnavailable || !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want the 503 and context.Canceled", err)
		}
		if want := "x: 503 Service Unavailable: busy; stopped while waiting 10s to try again: context canceled"; err == nil || err.Error() != want {
			t.Errorf("text %q, want %q", err, want)
		}
		if calls != 1 || res.Usage.Input != 12 {
			t.Errorf("%d calls, usage %+v; want 1 call and the input it said", calls, res.Usage)
		}
	})
}

// TestRetryManyAttempts: a backoff doubled past what a Duration holds
// stays at Max: each wait is still between half of Max and Max.
func TestRetryManyAttempts(t *testing.T) {
	server := &provider.Error{Provider: "x", Status: http.StatusBadGateway}
	errs := make([]error, 70)
	for i := range errs {
		errs[i] = server
	}
	p, calls := flaky(errs...)
	var waits []time.Duration
	r := provider.Retry(p, provider.RetryConfig{Attempts: len(errs), Sleep: func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}})
	if _, err := provider.Collect(r.Generate(context.Background(), &provider.Request{})); err != nil {
		t.Fatal(err)
	}
	if *calls != len(errs)+1 {
		t.Errorf("%d calls, want %d", *calls, len(errs)+1)
	}
	for i, d := range waits[len(waits)-40:] {
		if d < provider.DefaultRetryMax/2 || d > provider.DefaultRetryMax {
			t.Errorf("wait %d: %v, want between %v and %v", len(waits)-40+i, d, provider.DefaultRetryMax/2, provider.DefaultRetryMax)
		}
	}
}

// TestRetryNegativeBackoff: a negative Base waits for nothing, as a
// negative wait did, rather than failing to draw one at random.
func TestRetryNegativeBackoff(t *testing.T) {
	server := &provider.Error{Provider: "x", Status: http.StatusBadGateway}
	p, _ := flaky(server)
	var waits []time.Duration
	r := provider.Retry(p, provider.RetryConfig{Base: -time.Second, Sleep: func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}})
	if _, err := provider.Collect(r.Generate(context.Background(), &provider.Request{})); err != nil {
		t.Fatal(err)
	}
	if len(waits) != 1 || waits[0] != 0 {
		t.Errorf("waits %v, want one of 0", waits)
	}
}

// TestRetryOnRetry: OnRetry sees each error that is retried and the wait
// before the next try, so that a caller can say why it waits; the error
// that ends the stream is not announced as retried.
func TestRetryOnRetry(t *testing.T) {
	rate := &provider.Error{Provider: "x", Status: http.StatusTooManyRequests, RetryAfter: 7 * time.Second}
	timeout := &provider.TimeoutError{Provider: "x", Phase: provider.PhaseFirstByte, After: time.Minute}
	final := &provider.Error{Provider: "x", Status: http.StatusServiceUnavailable, RetryAfter: 3 * time.Second}
	p, _ := flaky(rate, timeout, final)
	type retried struct {
		err  error
		wait time.Duration
	}
	var got []retried
	var slept []time.Duration
	r := provider.Retry(p, provider.RetryConfig{
		Attempts: 2,
		OnRetry: func(ctx context.Context, err error, wait time.Duration) {
			if len(got) != len(slept) {
				t.Errorf("OnRetry called again before the wait of the last one")
			}
			got = append(got, retried{err, wait})
		},
		Sleep: func(ctx context.Context, d time.Duration) error {
			slept = append(slept, d)
			return nil
		},
	})
	_, err := provider.Collect(r.Generate(context.Background(), &provider.Request{}))
	if !errors.Is(err, final) {
		t.Errorf("err %v, want %v", err, final)
	}
	if len(got) != 2 || got[0].err != rate || got[1].err != timeout {
		t.Fatalf("OnRetry saw %v, want %v then %v", got, rate, timeout)
	}
	for i, g := range got {
		if g.wait != slept[i] {
			t.Errorf("OnRetry %d: wait %v, but slept %v", i, g.wait, slept[i])
		}
	}
	if got[0].wait != 7*time.Second {
		t.Errorf("OnRetry wait %v, want the 7s Retry-After", got[0].wait)
	}
}
