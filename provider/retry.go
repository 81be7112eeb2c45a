package provider

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"time"
)

// RetryConfig bounds [Retry]. The zero value retries 3 times with backoff
// from 500 ms doubling up to 30 s (each wait a random time between half
// the backoff and all of it), and waits up to 2 minutes when the
// provider says how long.
type RetryConfig struct {
	// Attempts is the number of retries after the first try; 0 means
	// DefaultRetryAttempts, negative means none.
	Attempts int
	// Base and Max bound the exponential backoff; 0 means the defaults.
	Base, Max time.Duration
	// MaxAfter is the longest wait the provider may ask for (Retry-After,
	// OpenAI's x-ratelimit-reset-*: [Error.RetryAfter]) that is honoured;
	// 0 means DefaultRetryMaxAfter. A longer one ends the stream with the
	// error at once, rather than waiting less and failing again: the
	// caller reads the wait in the *Error and decides.
	MaxAfter time.Duration
	// Sleep waits for d or until ctx is done; nil means a timer. Tests
	// replace it, and a durable engine can route it through its own clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, if not nil, is called before each wait with the error
	// that is retried and the wait, so that a caller can say why it
	// waits (a command line: "429 Too Many Requests; retrying in 20s").
	// It runs on the goroutine that reads the stream, so the wait starts
	// when it returns.
	OnRetry func(ctx context.Context, err error, wait time.Duration)
}

// Defaults of [RetryConfig].
const (
	DefaultRetryAttempts = 3
	DefaultRetryBase     = 500 * time.Millisecond
	DefaultRetryMax      = 30 * time.Second
	// A rate limit on tokens per minute asks for up to a minute.
	DefaultRetryMaxAfter = 2 * time.Minute
)

// Retry returns a Provider that retries p on temporary errors: a
// *[Error] whose status is 429 (except OpenAI's insufficient_quota), 408,
// 5xx (except [CodeInvalidSchema]) or Anthropic's 529; a
// *[TimeoutError] of PhaseConnect or PhaseFirstByte; and a network error
// marked [ErrNoAnswer] (connection refused or reset, closed before the
// first byte). Errors after the first byte of the answer (a stream cut or
// idle mid-way, [ErrTooLarge]) are not retried. It waits for the
// provider's Retry-After when there is one, up to RetryConfig.MaxAfter
// (2 minutes by default), and for an exponential backoff up to
// RetryConfig.Max otherwise, each wait drawn at random from its upper
// half, so that runs failing together (a provider's outage, a shared
// rate limit) do not all try again at the same instant. A Retry-After longer than MaxAfter is not
// waited for at all: the error ends the stream at once, since a retry
// sent before the limit resets fails again, and the caller may prefer
// to wait, or not. It only retries a stream that has not yielded any of
// a solution yet, so the caller never sees a chunk twice; a chunk that
// only says usage (see [Chunk.Usage]) passes through, so that what a
// failed attempt used is counted. A ctx that ends while it waits ends
// the stream at once, with an error that wraps both the attempt's error
// and ctx's.
func Retry(p Provider, cfg RetryConfig) Provider {
	if cfg.Attempts == 0 {
		cfg.Attempts = DefaultRetryAttempts
	}
	if cfg.Base == 0 {
		cfg.Base = DefaultRetryBase
	}
	if cfg.Max == 0 {
		cfg.Max = DefaultRetryMax
	}
	if cfg.MaxAfter == 0 {
		cfg.MaxAfter = DefaultRetryMaxAfter
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	retry := Func(func(ctx context.Context, req *Request) iter.Seq2[*Chunk, error] {
		return func(yield func(*Chunk, error) bool) {
			backoff := cfg.Base
			for attempt := 0; ; attempt++ {
				yielded := false
				var failed error
				for c, err := range p.Generate(ctx, req) {
					if err != nil {
						failed = err
						break
					}
					yielded = yielded || !c.UsageOnly()
					if !yield(c, nil) {
						return
					}
				}
				if failed == nil {
					return
				}
				after, ok := retryable(failed)
				if yielded || attempt >= cfg.Attempts || !ok || after > cfg.MaxAfter {
					yield(nil, failed)
					return
				}
				wait := max(min(backoff, cfg.Max), 0) // rand.N takes no negative
				wait = wait/2 + rand.N(wait/2+1)
				if after > 0 {
					wait = after
				}
				if cfg.OnRetry != nil {
					cfg.OnRetry(ctx, failed, wait)
				}
				if err := cfg.Sleep(ctx, wait); err != nil {
					// Both: the caller sees why it stopped, and what failed.
					yield(nil, fmt.Errorf("%w; stopped while waiting %v to try again: %w", failed, wait, err))
					return
				}
				if backoff < cfg.Max { // doubled on, it would overflow to a negative wait
					backoff *= 2
				}
			}
		}
	})
	if d, ok := p.(Describer); ok {
		return describedRetry{retry, d}
	}
	return retry
}

// describedRetry retries a Describer, and says its Endpoint.
type describedRetry struct {
	Func
	Describer
}

// retryable reports whether err is worth another try, and the wait the
// provider asked for, if any.
func retryable(err error) (time.Duration, bool) {
	if pe, ok := errors.AsType[*Error](err); ok && pe.Temporary() {
		return pe.RetryAfter, true
	}
	if te, ok := errors.AsType[*TimeoutError](err); ok {
		return 0, te.Phase == PhaseConnect || te.Phase == PhaseFirstByte
	}
	return 0, errors.Is(err, ErrNoAnswer)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
