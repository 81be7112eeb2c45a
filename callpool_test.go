package agent

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestCallPoolRecycles checks that a pool goes back for reuse only once
// nothing can touch it: at release when no worker is alive, else when the
// last worker leaves; and that it keeps no call of the finished run.
func TestCallPoolRecycles(t *testing.T) {
	x := &executor{cfg: &Config{}}
	for _, workers := range []bool{false, true} {
		p := newCallPool(4)
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
