package agent

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/augceo/agent/platform"
)

// callPool runs the calls of a loop run, at most limit at once. Workers
// start only as queued calls need them and then take one call after
// another, so a burst of calls costs a few goroutine hand-offs rather than
// two per call. The run's own goroutine, once it has nothing left to do but
// wait, may run a queued call itself (help) instead of sleeping; on a
// model that answers at once that is most of them.
type callPool struct {
	limit int

	mu       sync.Mutex
	queue    []job // calls not started, from head on
	head     int
	active   int          // calls running, on workers or on the run's goroutine
	workers  int          // worker goroutines alive
	starting bool         // a worker was started and has not looked at the queue yet
	finished []completion // from fhead on
	fhead    int
	wake     chan struct{} // holds a token once a completion is ready
	released bool          // the run is over: the last one out recycles p

	// gen counts the runs p served. A worker is started for one run (see
	// start); one that gets going only after that run released p, which
	// on a busy or single-core machine is common, finds gen moved on and
	// leaves without touching p, so the run need not wait for it to give
	// p back.
	gen uint64
	// late counts the workers let go at release that have not got going
	// yet, and adopted those of them a later run of p counts as its
	// starting worker (at most one): on a busy or single-core machine a
	// worker may get going only after many runs, and each run would start
	// a goroutine of its own while the last one still waits.
	late, adopted int

	// First backing arrays of queue and finished: a step of a few calls
	// does not grow them.
	queueBuf    [16]job
	finishedBuf [8]completion
}

// callPools keeps the pools of finished runs for the next ones.
var callPools = sync.Pool{New: func() any { return &callPool{wake: make(chan struct{}, 1)} }}

// job is a call to run.
type job struct {
	ctx    context.Context
	x      *executor
	c      *Call
	bg     bool
	direct bool // the run appends the result itself (see completion)
}

func (j *job) run() completion {
	res, resp, err := j.x.invokeLending(j.ctx, j.c, j.direct)
	if j.direct && err == nil && res.Messages == nil && j.c.output != nil {
		value := res.Value
		if value == nil {
			value = json.RawMessage("null")
		}
		return completion{call: j.c, resp: resp, bg: j.bg, direct: true, value: value, branch: res.Branch, date: platform.Now(j.ctx), lent: res.lent}
	}
	msgs, resp, err := j.x.record(j.ctx, j.c, res, resp, err)
	return completion{call: j.c, msgs: msgs, resp: resp, err: err, bg: j.bg}
}

func newCallPool(limit int) *callPool {
	p := callPools.Get().(*callPool)
	p.limit = limit
	p.queue, p.finished = p.queueBuf[:0], p.finishedBuf[:0]
	return p
}

// release gives p back for another run once nothing can touch it: no
// call queued, running or unread, and no worker alive. A worker started
// but not yet going is let go (see gen); one still on its way out gives
// p back as it leaves.
func (p *callPool) release() {
	p.mu.Lock()
	p.released = true
	if p.starting && p.head == len(p.queue) {
		p.starting = false
		p.workers--
		p.gen++ // in this critical section: the worker cannot start in between
		if p.adopted > 0 {
			p.adopted-- // a late one again, counted already
		} else {
			p.late++
		}
	}
	idle := p.idle()
	p.mu.Unlock()
	if idle {
		p.recycle()
	}
}

// idle reports whether the run is over and nothing can touch p. The
// caller holds p.mu.
func (p *callPool) idle() bool {
	return p.released && p.workers == 0 && !p.starting && p.active == 0 && p.head == len(p.queue) && p.fhead == len(p.finished)
}

// recycle puts p, idle, in callPools.
func (p *callPool) recycle() {
	select {
	case <-p.wake: // a token no one will wait for
	default:
	}
	p.mu.Lock() // no one else is here but late workers, who see gen moved on
	p.gen++
	// Keep no call of the run alive. take and next clear what they hand
	// over: only what was never taken is left, unless a list outgrew its
	// first array, which then still holds what it had.
	clearLeft(p.queue, p.head, p.queueBuf[:])
	clearLeft(p.finished, p.fhead, p.finishedBuf[:])
	p.queue, p.finished, p.head, p.fhead, p.released = nil, nil, 0, 0, false
	p.mu.Unlock()
	callPools.Put(p)
}

// clearLeft clears list from head on, and all of buf, its first backing
// array, when list no longer lies in it.
func clearLeft[T any](list []T, head int, buf []T) {
	clear(list[head:])
	if cap(list) > 0 && &list[:1][0] != &buf[0] {
		clear(buf)
	}
}

// submit queues a call. It starts nothing: while the answer streams, the
// run starts workers once it has read a chunk and waits for the next
// (kick); once the answer is whole, the run's goroutine waits in next,
// which starts workers only for what it does not run itself. A model
// that answers at once thus costs no goroutine at all.
func (p *callPool) submit(j job) {
	p.mu.Lock()
	p.queue = append(p.queue, j)
	p.mu.Unlock()
}

// kick starts a worker for the queued calls when one is needed.
func (p *callPool) kick() {
	p.mu.Lock()
	p.unlockStarting()
}

// unlockStarting releases p.mu, held by the caller, and starts a worker
// if the queue needs one.
func (p *callPool) unlockStarting() {
	start, gen := p.needWorker(), p.gen
	p.mu.Unlock()
	if start {
		goWorker(func() { p.work(gen) })
	}
}

// goWorker starts a worker; a test holds one back to make it late.
var goWorker = platform.Go

// needWorker reports whether to start a worker, and counts it: calls are
// queued, no worker is on its way to them already, and there is room.
// The caller holds p.mu.
func (p *callPool) needWorker() bool {
	if p.starting || p.head == len(p.queue) || p.workers >= p.limit || p.active >= p.limit {
		return false
	}
	p.starting = true
	p.workers++
	if p.late > p.adopted { // one is on its way already: it will be this one
		p.adopted++
		return false
	}
	return true
}

// take starts the next queued call if there is room. The caller holds p.mu.
func (p *callPool) take() (job, bool) {
	if p.head == len(p.queue) || p.active >= p.limit {
		return job{}, false
	}
	j := p.queue[p.head]
	p.queue[p.head] = job{}
	if p.head++; p.head == len(p.queue) {
		p.queue, p.head = p.queue[:0], 0
	}
	p.active++
	return j, true
}

// work runs queued calls of run gen until none is left that it may start.
func (p *callPool) work(gen uint64) {
	p.mu.Lock()
	if p.gen != gen { // let go at release: p is another run's by now
		p.late--
		if p.adopted == 0 {
			p.mu.Unlock()
			return
		}
		p.adopted-- // the run's starting worker: go on as one
	}
	p.starting = false
	for {
		j, ok := p.take()
		if !ok {
			p.workers--
			idle := p.idle()
			p.mu.Unlock()
			if idle { // the last one out
				p.recycle()
			}
			return
		}
		p.unlockStarting() // more is queued: let another worker help
		c := j.run()
		p.mu.Lock()
		p.active--
		p.finished = append(p.finished, c)
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// How the run's goroutine may help while it waits for a finished call.
type help int

const (
	helpNever help = iota
	// helpAlone runs a queued call only when it is the only call to run:
	// nothing else could finish meanwhile and need the run's reaction
	// (calls waiting for references, say).
	helpAlone
	helpAlways
)

// next returns a finished call. Without block it returns ok false when
// none is finished; with block it waits for one, and runs a queued call
// itself rather than wait when h allows.
func (p *callPool) next(block bool, h help) (completion, bool) {
	for {
		p.mu.Lock()
		if p.fhead < len(p.finished) {
			c := p.finished[p.fhead]
			p.finished[p.fhead] = completion{}
			if p.fhead++; p.fhead == len(p.finished) {
				p.finished, p.fhead = p.finished[:0], 0
			}
			p.mu.Unlock()
			return c, true
		}
		if !block {
			p.mu.Unlock()
			return completion{}, false
		}
		if h == helpAlways || h == helpAlone && p.active == 0 && len(p.queue)-p.head == 1 {
			if j, ok := p.take(); ok {
				p.unlockStarting() // for the rest of the queue
				c := j.run()
				p.mu.Lock()
				p.active--
				p.mu.Unlock()
				return c, true
			}
		}
		p.unlockStarting()
		<-p.wake
	}
}
