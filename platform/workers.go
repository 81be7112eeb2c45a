package platform

import "sync/atomic"

// Workers that finished a task wait here for the next one. A fresh
// goroutine starts with a small stack that grows (and is copied) as a tool
// call goes through JSON decoding and schema validation; a worker keeps
// its grown stack for the next call, which made a 10-call agent run about
// a third cheaper.
var (
	queue = make(chan func())
	idle  atomic.Int32
)

// MaxIdleWorkers bounds the workers kept waiting for tasks.
const MaxIdleWorkers = 64

// Go runs f on another goroutine, reusing an idle worker when there is one.
// f must not block forever: a worker is only reused once f returns.
func Go(f func()) {
	select {
	case queue <- f:
	default:
		go work(f)
	}
}

func work(f func()) {
	for {
		f()
		if idle.Add(1) > MaxIdleWorkers {
			idle.Add(-1)
			return
		}
		f = <-queue
		idle.Add(-1)
	}
}
