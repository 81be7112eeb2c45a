package platform

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestGo(t *testing.T) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for range 1000 {
		wg.Add(1)
		Go(func() {
			defer wg.Done()
			mu.Lock()
			n++
			mu.Unlock()
		})
	}
	wg.Wait()
	if n != 1000 {
		t.Errorf("ran %d tasks, want 1000", n)
	}
	if got := idle.Load(); got > MaxIdleWorkers {
		t.Errorf("%d idle workers, more than %d", got, MaxIdleWorkers)
	}
}

func TestNow(t *testing.T) {
	fixed := time.Date(2025, 10, 26, 12, 0, 0, 0, time.UTC)
	if got := Now(WithClock(context.Background(), func() time.Time { return fixed })); !got.Equal(fixed) {
		t.Errorf("Now = %v", got)
	}
	if Now(context.Background()).IsZero() {
		t.Error("the wall clock is zero")
	}
}

// TestWallNow checks the wall clock read through its base: it keeps
// pace with time.Now, never goes back, and takes a new base once the old
// is a second old.
func TestWallNow(t *testing.T) {
	prev := wallNow()
	for range 1000 {
		before := time.Now()
		got := wallNow()
		after := time.Now()
		if got.Before(prev) || got.Sub(before) < -time.Millisecond || got.Sub(after) > time.Millisecond {
			t.Fatalf("wallNow %v, not within %v .. %v or before %v", got, before, after, prev)
		}
		prev = got
	}
	old := time.Now().Add(-2 * time.Second)
	wallBase.Store(&old)
	if got := wallNow(); got.Sub(old) < 2*time.Second-time.Millisecond || *wallBase.Load() == old {
		t.Errorf("a stale base was kept: %v from %v", got, old)
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
