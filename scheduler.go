package agent

import (
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/ref"
)

// scheduler runs the calls of a run: the loop's, step after step, and a
// plan's. A call starts once its references resolve (a plan's call also
// waits for the calls it reads to settle) and Config.Confirm approved it,
// at most Concurrency at a time, through platform.Go. Each finished call
// appends what it wrote to the log, which may let waiting calls start.
// Only the goroutine of the run's event stream touches a scheduler;
// calls report on done.
type scheduler struct {
	*stream // the consumer's events
	confirm func(context.Context, *Call) (Decision, error)
	log     *message.Log
	conc    int
	usage   *provider.Usage   // the run's, which finished calls add to
	result  func() *RunResult // the run's result so far, for errors
	step    int               // the loop's step, for events; 0 in a plan
	// flush, when set, makes the starts of a round durable before any of
	// them runs (a plan's journal writes them in one Append).
	flush func(context.Context) error
	// stepEnd is set once the loop's step has its whole answer: a round
	// that starts nothing while nothing runs then leaves what settled in
	// the journal's buffer for the run's next write, which follows
	// without waiting on anything and takes the step's plan message (or
	// the run's end) too: one Append rather than two.
	stepEnd bool
	// stop cancels the calls running, when the run fails (its context's
	// cancel); failing is set once it did.
	stop    func()
	failing bool

	waiting queue          // calls not started yet
	writes  map[string]int // data messages appended, by kind: a blocked call waits for one of its kind
	running int            // calls started and not finished, background ones included
	bg      int            // of which fire-and-forget
	done    chan finished
	errs    []taskError // error messages of failed calls, in the order they failed
	// cut is set when a call ended with a context's error: if the run's
	// context is done, its cancellation cut the call short.
	cut bool
}

// cutShort reports whether the run's cancellation left calls unfinished:
// cut short, or never started.
func (s *scheduler) cutShort(ctx context.Context) bool {
	return ctx.Err() != nil && (s.cut || len(s.waiting) > 0)
}

// task is a call on its way through the scheduler.
type task struct {
	raw      json.RawMessage
	id       string // the call's ID
	index    int    // its position in its plan or step
	instance string // its _instance, when known before it is prepared
	exec     *executor
	// prepare resolves and validates the call against the log; nil means
	// exec.prepareCall.
	prepare func(*message.Log) (*Call, error)

	// A plan's call, or a loop's that reads what calls before it in its
	// step write (see waitForWriters):
	left    int       // calls it reads that have not settled: it waits until none is left
	readers []*task   // calls that read it
	node    *planNode // what it reads and writes, for the calls after it
	done    bool      // it settled
	// A call blocked on a reference of one kind is tried again only once
	// data of that kind was appended since (waitKind "" means at every
	// chance: an expression with a fallback may resolve through another).
	blocked  bool
	waitKind string
	seen     int

	// prior marks a call that settled in an earlier attempt of the run
	// (Resume): it does not run again; errMsg is its error, if it failed.
	prior  bool
	errMsg *message.Message
	// approved marks a call that started in an earlier attempt: the
	// advisors and Confirm let it run then, and are not asked again.
	approved bool
}

// taskError is the error message of a failed call.
type taskError struct {
	index int
	msg   message.Message
}

// finished is a call that returned.
type finished struct {
	t    *task
	call *Call
	bg   bool
	msgs []message.Message
	resp *Response
	err  error
}

func newScheduler(s *stream, cfg *Config, log *message.Log, usage *provider.Usage, result func() *RunResult) *scheduler {
	conc := cfg.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	return &scheduler{stream: s, confirm: cfg.Confirm, log: log, conc: conc, usage: usage, result: result, done: make(chan finished)}
}

// fail ends the run with err, once the calls still running returned.
func (s *scheduler) fail(err error) {
	s.settleRunning()
	s.end(err, s.result())
}

// settleRunning stops the calls still running when the run fails and
// records each as it returns: a call that ran to its end before the run
// failed keeps its output (a durable run journals it), and one the stop
// cut short is reported as cut, as after a cancellation.
func (s *scheduler) settleRunning() {
	if s.failing || s.stopped || s.stop == nil || s.running == 0 {
		return
	}
	s.failing = true
	s.stop()
	for s.running > 0 {
		if !s.finish(<-s.done) {
			return
		}
	}
}

// queue holds the calls that wait to start, the first in plan or step
// order on top: a min-heap by index (container/heap).
type queue []*task

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].index < q[j].index }
func (q queue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)        { *q = append(*q, x.(*task)) }
func (q *queue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return t
}

// add queues a call that waits for no other call; start tries it.
func (s *scheduler) add(t *task) { heap.Push(&s.waiting, t) }

// start starts the waiting calls that are ready, in order, while there
// is room. A call whose references do not resolve yet keeps waiting. It
// reports false when the run ended.
func (s *scheduler) start(ctx context.Context) bool {
	var starts []func()
	var bgStarts int // of which fire-and-forget
	var kept []*task // calls passed over, still blocked
	var failure error
	defer func() {
		for _, t := range kept {
			heap.Push(&s.waiting, t)
		}
		// Calls counted as running and never launched (the run ended
		// first) run no more: wait must not wait for them.
		s.running -= len(starts)
		s.bg -= bgStarts
		if failure != nil { // once only launched calls count as running
			s.fail(failure)
		}
	}()
	for len(s.waiting) > 0 && s.running < s.conc {
		t := heap.Pop(&s.waiting).(*task)
		if t.blocked && t.waitKind != "" && s.writes[t.waitKind] == t.seen {
			kept = append(kept, t) // nothing it waits for was written since
			continue
		}
		if t.prior { // it ran before the run stopped
			if t.errMsg != nil {
				s.errs = append(s.errs, taskError{t.index, *t.errMsg})
			}
			s.settle(t)
			continue
		}
		c, err := s.prepare(t)
		if errors.Is(err, errBlocked) {
			t.blocked, t.waitKind = true, ""
			if re, ok := errors.AsType[*ref.Error](err); ok && !strings.Contains(re.Expr, "||") {
				t.waitKind = refKind(re.Ref)
			}
			t.seen = s.writes[t.waitKind]
			kept = append(kept, t)
			continue
		}
		if err == nil && !t.approved {
			// The advisors decide before a person is asked.
			if reason := t.exec.veto(c); reason != "" {
				err = &CallError{Kind: Vetoed, Tool: c.Tool, Err: errors.New(reason)}
			}
		}
		if err == nil && s.confirm != nil && !t.approved {
			c.ID = t.id // the call Confirm sees is the one that runs
			d, cerr := s.confirmed(ctx, c)
			switch {
			case cerr != nil:
				failure = errorf("agent: confirm: %w", cerr)
				return false
			case d.Reject != "":
				err = &CallError{Kind: Rejected, Tool: c.Tool, Err: errors.New(d.Reject)}
			case d.Replace != nil:
				if c, err = t.exec.prepareCall(s.log, bytes.Clone(d.Replace)); err != nil {
					c = &Call{Raw: d.Replace, Tool: planTool(d.Replace)}
					err = replacementError(c.Tool, err)
				}
			}
		}
		if err != nil {
			if c == nil {
				c = &Call{Raw: t.raw, Tool: planTool(t.raw), Instance: t.instance}
			}
			c.ID = t.id
			if !s.failed(t, c, err) {
				return false
			}
			s.settle(t)
			continue
		}
		c.ID = t.id
		a, explicit, aerr := c.resolveActivity(t.exec.reg)
		c.activity, c.resolved = a, aerr == nil
		// A call that writes nowhere and runs code is fire-and-forget: a
		// step does not wait for it (010).
		bg := c.OutputPath == "" && explicit != ""
		// Started is yielded before the call runs: a durable run records
		// it first.
		if !s.emit(RunEvent{Kind: EventCallStarted, Step: s.step, Call: c}) {
			return false
		}
		s.running++
		if bg {
			s.bg++
		}
		run := func() {
			f := finished{t: t, call: c, bg: bg}
			returned := false
			defer func() {
				if returned {
					return
				}
				if p := recover(); p != nil {
					panic(p) // not the call's code, whose panics invoke recovers: a bug here
				}
				// runtime.Goexit in the call's code (t.Fatal in a test's
				// tool): the goroutine ends, and the run would wait for
				// the call forever.
				f.msgs, f.resp, f.err = t.exec.record(ctx, c, nil, nil, &CallError{Kind: Runtime, Tool: c.Tool, Err: errGoexit})
				s.done <- f
			}()
			f.msgs, f.resp, f.err = t.exec.runCall(platform.WithCall(ctx, c.ID), c)
			returned = true
			s.done <- f
		}
		if s.flush == nil {
			platform.Go(ctx, run) // nothing to make durable first
			continue
		}
		starts = append(starts, run)
		if bg {
			bgStarts++
		}
	}
	// What settled since the last round goes too, unless the step's end
	// takes it (see stepEnd).
	if s.flush != nil && (s.running > 0 || !s.stepEnd) {
		if err := s.flush(ctx); err != nil {
			failure = err
			return false // they never start
		}
	}
	for _, f := range starts {
		platform.Go(ctx, f)
	}
	starts, bgStarts = nil, 0 // launched
	return true
}

// refKind returns the kind of a reference such as "†state.a.b".
func refKind(r string) string {
	r = strings.TrimPrefix(r, ref.Dagger)
	kind, _, _ := strings.Cut(r, ".")
	return kind
}

// prepare prepares the call of t against the log.
func (s *scheduler) prepare(t *task) (*Call, error) {
	if t.prepare != nil {
		return t.prepare(s.log)
	}
	return t.exec.prepareCall(s.log, t.raw)
}

// poll takes the calls that finished, without waiting, and starts what
// they unblocked.
func (s *scheduler) poll(ctx context.Context) bool {
	n, ok := s.finishReady()
	if !ok || n == 0 {
		return ok
	}
	return s.start(ctx)
}

// finishReady takes the calls that finished, without waiting: their
// settling is journaled together, with the starts that follow.
func (s *scheduler) finishReady() (int, bool) {
	for n := 0; ; n++ {
		select {
		case f := <-s.done:
			if !s.finish(f) {
				return n, false
			}
		default:
			return n, true
		}
	}
}

// replacementError is why the call Confirm put in another's place
// cannot run. It says so, since the model, which reads it, did not write
// that call; and a reference of it that does not resolve fails it, since
// Confirm answered for now.
func replacementError(tool string, err error) error {
	kind := Structural
	if ce, ok := errors.AsType[*CallError](err); ok {
		kind, err = ce.Kind, ce.Err
	}
	return &CallError{Kind: kind, Tool: tool, Err: errorf("the call that Confirm put in its place: %w", missing(err))}
}

// runDown starts and finishes calls until none the caller waits for runs
// (with background, fire-and-forget calls too) and none can start. Calls
// still waiting then never became ready: each fails, which settles it
// (a plan's call that reads it through a fallback may then run).
func (s *scheduler) runDown(ctx context.Context, background bool) bool {
	for {
		if ctx.Err() == nil && !s.start(ctx) {
			return false
		}
		awaited := s.running
		if !background {
			awaited -= s.bg
		}
		if awaited == 0 && (s.running < s.conc || ctx.Err() != nil) {
			if ctx.Err() != nil || len(s.waiting) == 0 {
				return true
			}
			if !s.neverReady() {
				return false
			}
			continue
		}
		// Calls end soon once the run's context is cancelled.
		if !s.finish(<-s.done) {
			return false
		}
		if _, ok := s.finishReady(); !ok {
			return false
		}
	}
}

// neverReady fails the waiting calls: nothing runs that could write
// what they wait for.
func (s *scheduler) neverReady() bool {
	blocked := slices.SortedFunc(slices.Values(s.waiting), func(a, b *task) int { return a.index - b.index })
	s.waiting = nil
	for _, t := range blocked {
		_, err := s.prepare(t)
		err = missing(err)
		if err == nil {
			err = errors.New("it was never run")
		}
		c := &Call{Raw: t.raw, Tool: planTool(t.raw), Instance: t.instance, ID: t.id}
		if !s.failed(t, c, &CallError{Kind: Structural, Tool: c.Tool, Err: neverReady{err}}) {
			return false
		}
		s.settle(t)
	}
	return true
}

// failed records the error of a call.
func (s *scheduler) failed(t *task, c *Call, err error) bool {
	s.errs = append(s.errs, taskError{t.index, ErrorMessage(c.Raw, err)})
	return s.emit(RunEvent{Kind: EventCallFailed, Step: s.step, Call: c, Err: err})
}

// settle marks t finished, one way or another: the calls that read it
// wait for one call fewer, and those that waited for it last join the
// waiting calls.
func (s *scheduler) settle(t *task) {
	t.done = true
	for _, r := range t.readers {
		if r.left--; r.left == 0 {
			heap.Push(&s.waiting, r)
		}
	}
}

// finish records a finished call.
func (s *scheduler) finish(f finished) bool {
	s.running--
	if f.bg {
		s.bg--
	}
	if f.resp != nil { // a latent call or a delegate asked the model
		s.usage.Add(f.resp.Usage)
		if !s.emit(RunEvent{Kind: EventUsage, Step: s.step, Call: f.call, Usage: &f.resp.Usage, UsageLost: f.resp.UsageLost}) {
			return false
		}
	}
	if werr := s.unwritable(f.msgs); werr != nil {
		f.msgs = nil
		if f.err == nil {
			f.err = &CallError{Kind: Runtime, Tool: f.call.Tool, Err: werr}
			f.msgs = failureOutputs(f.call, f.err, werr.date)
			if s.unwritable(f.msgs) != nil {
				f.msgs = nil
			}
		}
	}
	if !s.appendBy(f.msgs, true) {
		return false
	}
	if f.err != nil {
		s.cut = s.cut || errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)
		if !s.failed(f.t, f.call, f.err) {
			return false
		}
	} else if !s.emit(RunEvent{Kind: EventCallFinished, Step: s.step, Call: f.call}) {
		return false
	}
	s.settle(f.t)
	return true
}

// writeError is a call's output that does not combine with the value it
// lands on.
type writeError struct {
	msg  string
	date time.Time // the output's, for the failure branch's
	err  error
}

func (e *writeError) Error() string { return e.msg }
func (e *writeError) Unwrap() error { return e.err }

// unwritable reports the first data message of msgs, a call's outputs,
// whose write would not combine with the value it lands on (a push onto
// an object). Appended, it would break every later read of that value:
// the next request's rendering, and a resume's. The scheduler's goroutine
// alone appends, so nothing comes between this check and the append. A
// call's outputs are checked each as those before it leave the value:
// writes through && can clash among themselves.
func (s *scheduler) unwritable(msgs []message.Message) *writeError {
	if i, err := s.log.CheckAll(msgs...); i >= 0 {
		m := &msgs[i]
		why := err
		if re, ok := errors.AsType[*ref.Error](err); ok && re.Err != nil {
			why = re.Err
		}
		msg := fmt.Sprintf("its result was not written: %s", why)
		if method, place, value, ok := writeOf(m); ok {
			msg = fmt.Sprintf("its result was not written: %s %s: %s; the result: %s", method, place, why, value)
		}
		date, _ := time.Parse(time.RFC3339Nano, m.Date)
		return &writeError{msg: msg, date: date, err: err}
	}
	return nil
}

// appendAll appends messages to the log, each with its event.
func (s *scheduler) appendAll(msgs []message.Message) bool { return s.appendBy(msgs, false) }

// appendBy is appendAll; byCall says a call wrote msgs as it returned
// (see RunEvent.byCall).
func (s *scheduler) appendBy(msgs []message.Message, byCall bool) bool {
	for i := range msgs {
		if err := s.log.Append(msgs[i]); err != nil {
			s.fail(errorf("agent: append: %w", err))
			return false
		}
		if msgs[i].Type == message.TypeData {
			if s.writes == nil {
				s.writes = map[string]int{}
			}
			kind := msgs[i].Kind
			if kind == "" {
				kind = message.KindData
			}
			s.writes[kind]++
		}
		if !s.emit(RunEvent{Kind: EventMessage, Step: s.step, Message: &msgs[i], byCall: byCall}) {
			return false
		}
	}
	return true
}

// takeErrors returns the error messages of the calls that failed since
// the last take.
func (s *scheduler) takeErrors() []message.Message {
	msgs := make([]message.Message, len(s.errs))
	for i, e := range s.errs {
		msgs[i] = e.msg
	}
	s.errs = nil
	return msgs
}

// wait lets every started call return after the stream was abandoned:
// the consumer was told each of them runs. The run's context is
// cancelled by then, so they end soon.
func (s *scheduler) wait() {
	for ; s.running > 0; s.running-- {
		<-s.done
	}
}

// waitForWriters makes t, a call of a loop's step, wait for the calls
// before it in the step that write what it reads (in its parameters or
// its _scopes), as a plan's call waits for its writers (012): where the
// path has a value already, the call would otherwise read it before or
// after the write, as the calls happened to start. It reports whether t
// can start now. Calls after t in the stream are not waited for: t may
// have started when they arrive.
func waitForWriters(t *task, before []*task) bool {
	n, _ := parseNode(t.index, t.raw, t.exec)
	if n == nil {
		return t.left == 0 // a malformed call fails as it is prepared
	}
	t.node = n
	for _, w := range before {
		if w.done || w.node == nil || len(w.node.writes) == 0 {
			continue
		}
		if wi := w.node.call.Instance; wi != "" && wi != n.call.Instance {
			continue // an instance's data is seen by its calls only
		}
		if readsWrites(n, w.node) {
			t.left++
			w.readers = append(w.readers, t)
		}
	}
	return t.left == 0
}

// readsWrites reports whether r reads a path related to one w writes.
func readsWrites(r, w *planNode) bool {
	for _, rd := range r.reads {
		for _, x := range rd.expr.Refs() {
			for _, wt := range w.writes {
				if wt.ref.Kind == x.Kind && wt.ref.Path.Related(x.Path) {
					return true
				}
			}
		}
	}
	return false
}

// confirmed asks Config.Confirm about c. Confirm is the program's code,
// called on the run's goroutine: a panic in it is its error, which fails
// the run with the log as it was, rather than unwinding through Run.
func (s *scheduler) confirmed(ctx context.Context, c *Call) (d Decision, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return s.confirm(ctx, c.handed())
}
