// Package platform is the one place that reads the wall clock. Everything
// else asks it through the context, so a test, a replay or a durable
// engine can supply its own time.
package platform

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"time"
)

// Clock returns the current time.
type Clock func() time.Time

type clockKey struct{}

// WithClock returns a context whose Now is c.
func WithClock(ctx context.Context, c Clock) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, clockKey{}, c)
}

// Now returns the time of the context's clock, or the wall clock.
func Now(ctx context.Context) time.Time {
	if c, ok := ctx.Value(clockKey{}).(Clock); ok {
		return c()
	}
	return wallNow()
}

// wallNow is time.Now read as the wall clock of at most a second ago plus
// the monotonic time since: time.Now reads two clocks, time.Since one,
// and a run stamps every output. A step of the wall clock shows within
// a second.
func wallNow() time.Time {
	if b := wallBase.Load(); b != nil {
		if d := time.Since(*b); d >= 0 && d < time.Second {
			return b.Add(d)
		}
	}
	t := time.Now()
	wallBase.Store(&t)
	return t
}

// wallBase is the last time wallNow read the wall clock.
var wallBase atomic.Pointer[time.Time]

type idKey struct{}

// WithIDs returns a context whose NewID calls f.
func WithIDs(ctx context.Context, f func() string) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, idKey{}, f)
}

// NewID returns a new identifier from the context's id source, or a random
// one that sorts by creation time: 12 hex digits of Unix milliseconds, a
// dash and 8 random hex digits.
func NewID(ctx context.Context) string {
	if f, ok := ctx.Value(idKey{}).(func() string); ok {
		return f()
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%012x-%x", time.Now().UnixMilli(), b)
}
