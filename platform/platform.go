// Package platform is the one place that reads the wall clock. Everything
// else asks it through the context, so a test, a replay or a durable
// engine can supply its own time.
package platform

import (
	"context"
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
