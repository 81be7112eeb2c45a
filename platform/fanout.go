package platform

import "context"

// Fanout starts task so that it runs alongside its caller. The default
// starts a goroutine; a durable engine (Temporal, say) supplies one that
// runs the task where its workflow can replay it. Tasks must not block
// forever: a run waits for every task it started before it returns.
type Fanout func(task func())

type fanoutKey struct{}

// WithFanout returns a context whose Go calls f.
func WithFanout(ctx context.Context, f Fanout) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, fanoutKey{}, f)
}

// Go starts task with the context's Fanout, or on a new goroutine. The
// calls of a run, in the loop and in plans alike, start here.
func Go(ctx context.Context, task func()) {
	if f, ok := ctx.Value(fanoutKey{}).(Fanout); ok {
		f(task)
		return
	}
	go task()
}
