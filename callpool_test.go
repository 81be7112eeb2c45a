package agent

import (
	"context"
	"sync"
	"testing"
	"time"
)

// freshPool returns a pool as newCallPool does, but a new one, not one
// from callPools, which may carry a late worker of another test.
func freshPool() *callPool {
	p := &callPool{wake: make(chan struct{}, 1), limit: 4}
	p.queue, p.finished = p.queueBuf[:0], p.finishedBuf[:0]
	return p
}

// TestCallPoolRecycles checks that a pool goes back for reuse only once
// nothing can touch it: at release when no worker is alive, else when the
// last worker leaves; and that it keeps no call of the finished run.
func TestCallPoolRecycles(t *testing.T) {
	x := &executor{cfg: &Config{}}
	for _, workers := range []bool{false, true} {
		p := freshPool()
		var ran sync.WaitGroup
		block := make(chan struct{})
		for range 3 {
			ran.Add(1)
			c := &Call{Tool: "t", resolved: true, activity: ActivityFunc(func(ctx context.Context, c *Call) (*Result, error) {
				defer ran.Done()
				<-block
				return &Result{}, nil
			})}
			p.submit(job{ctx: context.Background(), x: x, c: c})
		}
		if workers {
			p.kick() // the calls run on workers, which outlive the run's last read
		}
		close(block)
		for range 3 {
			if _, ok := p.next(true, helpAlways); !ok {
				t.Fatal("no completion")
			}
		}
		ran.Wait()
		p.release()
		deadline := time.Now().Add(5 * time.Second)
		for {
			p.mu.Lock()
			done := !p.released && p.queue == nil // recycled
			p.mu.Unlock()
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("workers %v: the pool was never recycled", workers)
			}
			time.Sleep(time.Millisecond)
		}
		p.mu.Lock()
		for i := range p.queueBuf {
			if p.queueBuf[i].c != nil {
				t.Errorf("workers %v: a recycled pool keeps a call", workers)
			}
		}
		p.mu.Unlock()
	}
}

// TestCallPoolAdoptsLateWorker checks that a run which needs a worker
// while one let go by an earlier run of its pool is still on its way
// starts none, and that the late one, once going, serves it (one not
// adopted leaves: TestCallPoolLetsLateWorkerGo).
func TestCallPoolAdoptsLateWorker(t *testing.T) {
	var late []func()
	defer func(g func(func())) { goWorker = g }(goWorker)
	goWorker = func(f func()) { late = append(late, f) }
	x := &executor{cfg: &Config{}}
	ran := 0
	act := ActivityFunc(func(ctx context.Context, c *Call) (*Result, error) {
		ran++
		return &Result{}, nil
	})
	p := freshPool() // after each run, taken back as it is
	reuse := func() { p.limit, p.queue, p.finished = 4, p.queueBuf[:0], p.finishedBuf[:0] }
	for run := range 2 { // each run leaves a worker started that never got going
		for range 2 {
			p.submit(job{ctx: context.Background(), x: x, c: &Call{Tool: "t", resolved: true, activity: act}})
		}
		for range 2 {
			if _, ok := p.next(true, helpAlways); !ok {
				t.Fatal("no completion")
			}
		}
		p.release()
		p.mu.Lock()
		if p.queue != nil {
			t.Fatalf("run %d: the pool was not recycled", run)
		}
		p.mu.Unlock()
		reuse()
		if len(late) != 1 {
			t.Fatalf("run %d: %d workers started, want 1 (the second run adopts the first's)", run, len(late))
		}
	}
	// A third run queues calls and wants a worker: the late one is adopted.
	for range 2 {
		p.submit(job{ctx: context.Background(), x: x, c: &Call{Tool: "t", resolved: true, activity: act}})
	}
	p.kick()
	if len(late) != 1 {
		t.Fatalf("%d workers started, want the late one adopted", len(late))
	}
	ran = 0
	late[0]() // it gets going now: it runs the queued calls
	if ran != 2 {
		t.Fatalf("the adopted worker ran %d calls, want 2", ran)
	}
	if len(late) != 2 { // it started a helper for the second call, as any worker does
		t.Fatalf("%d workers started, want 2", len(late))
	}
	late[1]() // which finds nothing left
	for range 2 {
		if _, ok := p.next(false, helpNever); !ok {
			t.Fatal("a call the adopted worker ran did not finish")
		}
	}
	p.mu.Lock()
	if p.late != 0 || p.adopted != 0 || p.workers != 0 || p.starting {
		t.Errorf("late %d, adopted %d, workers %d, starting %v", p.late, p.adopted, p.workers, p.starting)
	}
	p.mu.Unlock()
}

// TestCallPoolRecycleOutgrown: a run whose queue and finished list
// outgrew their first arrays leaves nothing of its calls in them.
func TestCallPoolRecycleOutgrown(t *testing.T) {
	defer func(g func(func())) { goWorker = g }(goWorker)
	goWorker = func(func()) {} // no worker: the run does all itself
	x := &executor{cfg: &Config{}}
	p := freshPool()
	act := ActivityFunc(func(ctx context.Context, c *Call) (*Result, error) { return &Result{}, nil })
	n := len(p.queueBuf) + 4
	for range n {
		p.submit(job{ctx: context.Background(), x: x, c: &Call{Tool: "t", resolved: true, activity: act}})
	}
	p.mu.Lock()
	for range len(p.finishedBuf) + 2 { // as if workers had finished calls
		p.finished = append(p.finished, completion{call: &Call{Tool: "done"}})
	}
	p.mu.Unlock()
	for range n + len(p.finishedBuf) + 2 {
		if _, ok := p.next(true, helpAlways); !ok {
			t.Fatal("no completion")
		}
	}
	p.mu.Lock()
	p.workers, p.starting = 0, false // the workers goWorker dropped
	p.mu.Unlock()
	p.release()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queue != nil || p.released {
		t.Fatal("the pool was not recycled")
	}
	for i := range p.queueBuf {
		if p.queueBuf[i].c != nil {
			t.Errorf("queue %d keeps a call", i)
		}
	}
	for i := range p.finishedBuf {
		if p.finishedBuf[i].call != nil {
			t.Errorf("finished %d keeps a call", i)
		}
	}
}

// TestCallPoolLetsLateWorkerGo checks that a run which did all its calls
// itself while a worker it started never got going gives its pool back at
// once, and that the worker, when it does get going, leaves the pool, by
// then another run's, as it finds it.
func TestCallPoolLetsLateWorkerGo(t *testing.T) {
	var late []func() // the workers started, held back until the test lets them go
	defer func(g func(func())) { goWorker = g }(goWorker)
	goWorker = func(f func()) { late = append(late, f) }
	x := &executor{cfg: &Config{}}
	p := freshPool()
	ran := 0
	for range 2 {
		p.submit(job{ctx: context.Background(), x: x, c: &Call{Tool: "t", resolved: true, activity: ActivityFunc(func(ctx context.Context, c *Call) (*Result, error) {
			ran++
			return &Result{}, nil
		})}})
	}
	for range 2 {
		if _, ok := p.next(true, helpAlways); !ok {
			t.Fatal("no completion")
		}
	}
	p.mu.Lock()
	started := p.starting
	p.mu.Unlock()
	if !started || ran != 2 || len(late) != 1 {
		t.Fatalf("starting %v, ran %d: want a worker started for the second call, which the run ran itself", started, ran)
	}
	p.release()
	p.mu.Lock()
	recycled, gen := !p.released && p.queue == nil, p.gen
	p.mu.Unlock()
	if !recycled {
		t.Fatal("the run waited for a worker that never got going")
	}
	// The pool serves another run; the late worker gets going now.
	p.limit, p.queue = 4, p.queueBuf[:0]
	late[0]()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers != 0 || p.starting || p.gen != gen || p.released {
		t.Errorf("the late worker touched the next run's pool: workers %d, starting %v, gen %d (was %d)", p.workers, p.starting, p.gen, gen)
	}
}
