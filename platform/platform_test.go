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
