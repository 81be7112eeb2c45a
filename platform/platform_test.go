package platform

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestNow(t *testing.T) {
	fixed := time.Date(2025, 10, 26, 12, 0, 0, 0, time.UTC)
	if got := Now(WithClock(context.Background(), func() time.Time { return fixed })); !got.Equal(fixed) {
		t.Errorf("Now = %v", got)
	}
	if Now(context.Background()).IsZero() {
		t.Error("the wall clock is zero")
	}
}

func TestNewID(t *testing.T) {
	ctx := context.Background()
	a, b := NewID(ctx), NewID(ctx)
	if a == b || len(a) != 21 || a[12] != '-' {
		t.Fatalf("NewID() = %q, %q; want two distinct ids of the form 12hex-8hex", a, b)
	}
	n := 0
	ctx = WithIDs(ctx, func() string { n++; return fmt.Sprint("run-", n) })
	if got := NewID(ctx); got != "run-1" {
		t.Fatalf("NewID with WithIDs = %q, want run-1", got)
	}
}

func TestGoFanout(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	Go(context.Background(), wg.Done) // a goroutine of its own
	wg.Wait()

	var ran []int
	ctx := WithFanout(context.Background(), func(task func()) { task() }) // inline, in order
	for i := range 3 {
		Go(ctx, func() { ran = append(ran, i) })
	}
	if fmt.Sprint(ran) != "[0 1 2]" {
		t.Errorf("the context's fan-out ran %v, want [0 1 2]", ran)
	}
	if WithFanout(context.Background(), nil) != context.Background() {
		t.Error("WithFanout(nil) changed the context")
	}
}

func TestCallOf(t *testing.T) {
	run := context.Background()
	if CallOf(run) != nil {
		t.Fatal("a run's context runs for a call")
	}
	outer := WithCall(run, "1.0")
	s := CallOf(outer)
	if s.ID() != "1.0" || s.Outer() != nil {
		t.Errorf("call %q, outer %v; want 1.0, nil", s.ID(), s.Outer())
	}
	// A run started by the call's code has calls of its own, whose IDs
	// may repeat the outer run's; Outer tells them apart.
	inner := CallOf(WithCall(outer, "1.0"))
	if inner.ID() != "1.0" || inner.Outer() != s {
		t.Errorf("inner call %q, outer %p; want 1.0, %p", inner.ID(), inner.Outer(), s)
	}
	if CallOf(outer) != s {
		t.Error("WithCall changed the context it was given")
	}
}

func TestCallHook(t *testing.T) {
	type key struct{}
	var seen []string
	run := WithCallHook(context.Background(), func(ctx context.Context) context.Context {
		seen = append(seen, CallOf(ctx).ID())
		return context.WithValue(ctx, key{}, "hooked")
	})
	ctx := WithCall(run, "2.1")
	if ctx.Value(key{}) != "hooked" || CallOf(ctx).ID() != "2.1" {
		t.Errorf("the call's context has %v and call %q; want the hook's value and 2.1", ctx.Value(key{}), CallOf(ctx).ID())
	}
	// A run started from the call's code keeps the hook.
	WithCall(ctx, "1.0")
	if fmt.Sprint(seen) != "[2.1 1.0]" {
		t.Errorf("the hook saw calls %v, want [2.1 1.0]", seen)
	}
	if WithCall(context.Background(), "1.0").Value(key{}) != nil {
		t.Error("a call without a hook went through one")
	}
}
