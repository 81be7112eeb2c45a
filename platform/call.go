package platform

import "context"

// A CallScope is a call of a run that code runs for: its activity, its
// latent request, a delegate's run. Instrumentation reads it with
// [CallOf] to place what that code does under the call, such as a
// request's span under the call's.
type CallScope struct {
	id    string
	outer *CallScope
}

// ID returns the call's ID, as its run gave it.
func (s *CallScope) ID() string { return s.id }

// Outer returns the call that the run of s runs for, or nil. Calls of a
// run nested in a call have IDs of their own, which may repeat the outer
// run's: "1.0" in both. Comparing Outer with the scope a run started in
// tells which run a call is of.
func (s *CallScope) Outer() *CallScope { return s.outer }

type (
	callKey     struct{}
	callHookKey struct{}
)

// WithCall returns ctx, the context of a run, for the code of the run's
// call id, passed through the context's [CallHook] if it has one.
func WithCall(ctx context.Context, id string) context.Context {
	s := &CallScope{id: id, outer: CallOf(ctx)}
	ctx = context.WithValue(ctx, callKey{}, s)
	if h, ok := ctx.Value(callHookKey{}).(CallHook); ok {
		ctx = h(ctx)
	}
	return ctx
}

// A CallHook returns the context that the code of a call runs with,
// given ctx, on which [CallOf] is that call. Instrumentation adds what
// that code should see there, such as the call's span, so that the spans
// an activity starts are the call's children.
type CallHook func(ctx context.Context) context.Context

// WithCallHook returns a context whose calls, and those of the runs
// started from them, go through h; it replaces the hook ctx had.
func WithCallHook(ctx context.Context, h CallHook) context.Context {
	return context.WithValue(ctx, callHookKey{}, h)
}

// CallOf returns the innermost call that ctx runs for, or nil.
func CallOf(ctx context.Context) *CallScope {
	s, _ := ctx.Value(callKey{}).(*CallScope)
	return s
}
