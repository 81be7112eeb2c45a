// Package platform is the one place that reads the wall clock, makes ids
// and starts goroutines for calls. Everything else asks it through the
// context, so a test, a replay or a durable engine can supply its own
// time, ids and fan-out. The context of a call's code also says which
// call it runs for ([CallOf]), for instrumentation to hook into
// ([WithCallHook]).
package platform

import (
	"context"
	"crypto/rand"
	"fmt"
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
	return time.Now()
}

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
