package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/ref"
)

// Defaults of the loop settings in [Config].
const (
	DefaultMaxSteps        = 20
	DefaultMaxCallsPerStep = 100
	DefaultConcurrency     = 8
)

// Limit errors end a run; the log up to that point is in the RunResult.
var (
	ErrMaxSteps    = errors.New("agent: too many steps")
	ErrMaxCalls    = errors.New("agent: too many calls in one step")
	ErrTokenBudget = errors.New("agent: token budget spent")
)

// Decision is what Config.Confirm says about a call. The zero Decision
// approves it.
type Decision struct {
	// Reject, when not empty, stops the call; the reason is fed back to
	// the model as an error of that call.
	Reject string
	// Replace, when set, runs this call instead.
	Replace json.RawMessage
}

// RunResult is the outcome of a run.
type RunResult struct {
	// Solution is the last solution; its Output is the run's output.
	Solution *Solution
	// Log holds every message of the run: the context given, outputs of
	// calls, plans and errors.
	Log *message.Log
	// Usage sums every provider call of the run.
	Usage provider.Usage
	// Steps is the number of requests made.
	Steps int
	// Plan holds the calls of a lazy run (012): the model planned them and
	// nothing ran. Approve them and run them with ExecutePlan.
	Plan []json.RawMessage
	// RunID names the run in Config.Store, when there is one.
	RunID string
	// Advice holds the advisors' opinions of the last solution that had
	// any (017), with their votes; Tally weighs them.
	Advice []Opinion
}

// EventKind names what a RunEvent reports.
type EventKind string

// The kinds of run events.
const (
	EventStep         EventKind = "step"          // a request starts
	EventThinking     EventKind = "thinking"      // visible reasoning text
	EventCallStarted  EventKind = "call.started"  // a call was confirmed and runs
	EventCallFinished EventKind = "call.finished" // a call wrote its result
	EventCallFailed   EventKind = "call.failed"   // a call failed; its error message follows at the end of the tick
	EventMessage      EventKind = "message"       // a message was appended to the log
	EventUsage        EventKind = "usage"         // usage of a finished request
	EventAdvice       EventKind = "advice"        // the advisors' opinions of a solution (017)
	EventDone         EventKind = "done"          // the run ended with an output
)

// RunEvent is one thing that happened during a run.
type RunEvent struct {
	Kind    EventKind
	Step    int
	Call    *Call            // call events
	Err     error            // EventCallFailed
	Message *message.Message // EventMessage
	Text    string           // EventThinking
	Usage   *provider.Usage  // EventUsage: the request's; EventDone: the run's
	Result  *RunResult       // EventDone
	// Opinions are the advisors' entries of the step's solution, with
	// their votes (EventAdvice); Tally weighs them.
	Opinions []Opinion
}

// Run runs the agent loop (010): it makes Requests until a solution has an
// output, running the calls of each solution as they stream in.
func Run(ctx context.Context, cfg Config, schema json.RawMessage, msgs []message.Message) (*RunResult, error) {
	cfg.quiet = true
	if cfg.Store == nil && cfg.Provider != nil {
		// No one reads the events: the run keeps its outcome itself,
		// without the closures of a stream.
		return loopEvents(ctx, cfg, schema, msgs, 1, nil)
	}
	return runStream(ctx, cfg, schema, msgs)
}

// runStream is Run reading the event stream: its variables, which the
// loop's body shares, live on the heap, and a quiet run does without.
func runStream(ctx context.Context, cfg Config, schema json.RawMessage, msgs []message.Message) (*RunResult, error) {
	var res *RunResult
	for ev, err := range Events(ctx, cfg, schema, msgs) {
		if err != nil {
			var le *LimitError
			if errors.As(err, &le) {
				return le.Result, err
			}
			return res, err
		}
		if ev.Kind == EventDone {
			res = ev.Result
		}
	}
	return res, nil
}

// LimitError ends a run that hit a limit or was cancelled; Result holds
// the log as it was.
type LimitError struct {
	Err    error
	Result *RunResult
}

func (e *LimitError) Error() string { return e.Err.Error() }
func (e *LimitError) Unwrap() error { return e.Err }

// Events is Run as a stream of events. It is single-use and runs on the
// caller's goroutine; calls run on goroutines of their own, bounded by
// Config.Concurrency. Breaking out of the stream cancels the running calls
// and waits for them.
func Events(ctx context.Context, cfg Config, schema json.RawMessage, msgs []message.Message) iter.Seq2[RunEvent, error] {
	return func(yield func(RunEvent, error) bool) {
		if cfg.Provider == nil {
			yield(RunEvent{}, ErrNoProvider)
			return
		}
		loopEvents(ctx, cfg, schema, msgs, 1, yield)
	}
}

// loopEvents runs the loop from step first. With a nil yield, which
// needs a run without a Store, nothing is yielded: it returns what Run
// does instead.
func loopEvents(ctx context.Context, cfg Config, schema json.RawMessage, msgs []message.Message, first int, yield func(RunEvent, error) bool) (res *RunResult, err error) {
	ctx, cancel := context.WithCancel(platform.WithClock(ctx, cfg.Clock))
	defer cancel()
	reg := cfg.registry()
	log, err := reg.runLog(msgs)
	if err != nil {
		err = fmt.Errorf("agent: context: %w", err)
		if yield != nil {
			yield(RunEvent{}, err)
		}
		return nil, err
	}
	conc := cfg.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	r := runs.Get().(*run)
	r.cfg, r.schema, r.log, r.pool = cfg, schema, log, newCallPool(conc)
	if r.writes == nil { // a new run: these stay with it when it is recycled
		r.writes = map[string]int{}
		r.wrote = func(kind string) { r.writes[kind]++ }
		r.onEvent = r.tick.event
	}
	r.kick = r.pool.kick // made once, not at every step
	r.direct = cfg.quiet && cfg.Store == nil
	if cfg.Store != nil {
		j, err := openJournal(ctx, cfg, kindLoop, runSpec{Schema: schema}, msgs, cfg.resume != nil)
		if err != nil {
			yield(RunEvent{}, err)
			return nil, err
		}
		r.cfg.RunID = j.run.ID
		j.result = func() *RunResult { return r.result(nil, 0) }
		var finish func()
		yield, finish = j.wrap(ctx, yield)
		defer finish()
	}
	r.yield = yield
	defer func() {
		cancel() // stop calls still running, then wait for them
		r.wait()
		r.pool.release()
		res, err = r.done, r.err
		if cfg.Store == nil { // else the journal's closures may still read r
			r.recycle()
		}
	}()
	r.loop(ctx, first)
	return nil, nil // set by the deferred function
}

// runs keeps the state of finished runs, with its buffers, for the next.
var runs = sync.Pool{New: func() any { return new(run) }}

// recycle puts r, whose run is over and whose calls have all returned,
// in runs: nothing of the run is kept but empty buffers.
func (r *run) recycle() {
	writes, wrote, onEvent, slab := r.writes, r.wrote, r.onEvent, r.slab
	slab.reset()
	clear(writes)
	pending, all := r.tick.pending[:cap(r.tick.pending)], r.tick.all[:cap(r.tick.all)]
	clear(pending)
	clear(all)
	// Cleared, then what is kept set again: clearing shades only the old
	// pointers while the collector marks, where copying a whole new run
	// over this one would shade the new ones too.
	*r = run{}
	r.writes, r.wrote, r.onEvent, r.slab = writes, wrote, onEvent, slab
	r.tick.pending, r.tick.all = pending[:0], all[:0]
	runs.Put(r)
}

// completion is a finished call.
type completion struct {
	call *Call
	msgs []message.Message
	resp *Response
	err  error
	bg   bool // fire-and-forget: the step does not wait for it

	// direct: the call's result, to append to the log as its output
	// without messages made of it (see Config.quiet)
	direct bool
	value  json.RawMessage
	branch message.Branch
	date   time.Time
	lent   interface{ giveBack() } // holds value: given back once it is copied
}

type run struct {
	stream
	cfg    Config
	schema json.RawMessage
	log    *message.Log

	usage   provider.Usage
	pool    *callPool
	kick    func() // pool.kick
	running int    // calls submitted and not finished, background ones included
	bg      int    // of which fire-and-forget
	exec    *executor
	tick    tick
	prep    *prepared // the last request, carried to the next step

	lazy    bool              // the context's plan is lazy: plan, do not run
	planned []json.RawMessage // the calls of a lazy run

	advice []Opinion // the last advisors' opinions

	writes    map[string]int          // data messages appended while calls wait, by kind (see counting)
	wrote     func(kind string)       // counts one in writes
	onEvent   func(Event, error) bool // tick.event, made once
	direct    bool                    // no one reads EventMessage: see Config.quiet
	stepCfg   *Config                 // the configuration calls run with
	stepCfgs  Config                  // where stepCfg points
	execs     [2]executor             // the executors of the first steps
	firstStep int                     // the number of the first step
	blockedOn string                  // the kind the last blocked call waits for
	blockedAt *ref.Ref                // and the reference, when it alone blocks it
	slab      callSlab                // the calls of a quiet run, kept for the next
}

// waiting is a call whose references did not resolve yet.
type waiting struct {
	raw  json.RawMessage
	id   string   // the call's ID
	kind string   // the kind it waits for; "" means try at every chance
	seen int      // writes of that kind when it was last tried
	at   *ref.Ref // the reference it waits for, if known: tried first
	call *Call    // the call as parsed when it was first tried
}

// refKind returns the kind of a reference such as "†state.a.b".
func refKind(r string) string {
	r = strings.TrimPrefix(r, ref.Dagger)
	if i := strings.IndexByte(r, '.'); i >= 0 {
		return r[:i]
	}
	return r
}

// stream is the consumer's side of a scheduler's events: it never
// yields again once the consumer stopped or an error was yielded.
type stream struct {
	// yield, when nil, is Run's: done and err keep the outcome.
	yield   func(RunEvent, error) bool
	stopped bool
	done    *RunResult
	err     error
}

func (s *stream) emit(ev RunEvent) bool {
	if s.stopped {
		return false
	}
	if s.yield == nil {
		if ev.Kind == EventDone {
			s.done = ev.Result
		}
		return true
	}
	if !s.yield(ev, nil) {
		s.stopped = true
	}
	return !s.stopped
}

// end yields err, as a *LimitError holding res, and stops the stream.
func (s *stream) end(err error, res *RunResult) {
	if s.stopped {
		return
	}
	le := &LimitError{Err: err, Result: res}
	if s.yield == nil {
		s.done, s.err = res, le
	} else {
		s.yield(RunEvent{}, le)
	}
	s.stopped = true
}

func (r *run) fail(err error) { r.end(err, r.result(nil, 0)) }

func (r *run) result(sol *Solution, steps int) *RunResult {
	return &RunResult{Solution: sol, Log: r.log, Usage: r.usage, Steps: steps, RunID: r.cfg.RunID, Advice: r.advice}
}

func (r *run) loop(ctx context.Context, first int) {
	r.firstStep = first
	maxSteps := r.cfg.MaxSteps
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	if i, _ := r.log.LastOf(message.TypePlan); i >= 0 { // LastPlan without copying the log
		_, mode, ok := LastPlan([]message.Message{r.log.At(i)})
		r.lazy = ok && mode == PlanLazy
	}
	for step := first; ; step++ {
		if step > maxSteps {
			r.fail(fmt.Errorf("%w (%d)", ErrMaxSteps, maxSteps))
			return
		}
		if r.cfg.TokenBudget > 0 && r.usage.Total() >= r.cfg.TokenBudget {
			r.fail(fmt.Errorf("%w: used %d of %d tokens", ErrTokenBudget, r.usage.Total(), r.cfg.TokenBudget))
			return
		}
		if err := ctx.Err(); err != nil {
			r.fail(err)
			return
		}
		if !r.emit(RunEvent{Kind: EventStep, Step: step}) {
			return
		}
		sol, ok := r.step(ctx, step)
		if !ok {
			return
		}
		if r.lazy { // one request: the plan is the result
			res := r.result(sol, step)
			res.Plan = r.planned
			r.emit(RunEvent{Kind: EventDone, Step: step, Usage: &res.Usage, Result: res})
			return
		}
		if sol != nil && sol.Done() {
			r.drainBackground(ctx, step)
			res := r.result(sol, step)
			r.emit(RunEvent{Kind: EventDone, Step: step, Usage: &res.Usage, Result: res})
			return
		}
	}
}

// step makes one request and runs its calls: the reactive orchestrator of
// page 010.
func (r *run) step(ctx context.Context, step int) (*Solution, bool) {
	cfg := r.cfg
	// Calls run as they stream in, so a solution cannot be re-asked
	// quietly: an invalid one becomes an error message for the next step.
	cfg.CallbackPath, cfg.N, cfg.MaxRepairs = "calls", 1, -1
	reg := cfg.registry()
	p, err := prepareNext(ctx, cfg, r.schema, r.log, r.prep)
	r.prep = p
	if err != nil {
		r.fail(err)
		return nil, false
	}
	if r.stepCfg == nil { // the same at every step: shared by the steps' executors
		r.stepCfgs = cfg
		r.stepCfg = &r.stepCfgs
	}
	// A step's executor serves its calls until they end, maybe past the
	// step: the first steps' live in the run.
	if k := step - r.firstStep; k >= 0 && k < len(r.execs) {
		r.execs[k] = executor{cfg: r.stepCfg, reg: reg, build: p.build}
		r.exec = &r.execs[k]
	} else {
		r.exec = &executor{cfg: r.stepCfg, reg: reg, build: p.build}
	}
	if r.direct && r.cfg.Confirm == nil { // no one else sees a call: see callSlab
		r.exec.calls = &r.slab
	}
	p.trust = !r.lazy // every call is checked against its tool as it streams in
	t := &r.tick
	*t = tick{r: r, ctx: ctx, step: step, pending: t.pending[:0], all: t.all[:0], maxCalls: r.cfg.MaxCallsPerStep}
	if t.maxCalls <= 0 {
		t.maxCalls = DefaultMaxCallsPerStep
	}
	cfg.chunkDone = r.kick  // calls read from a chunk start while the model goes on
	cfg.lendElements = true // t.event keeps an element's value, not the element
	p.stream(ctx, cfg, r.onEvent)
	if t.stop {
		return nil, false
	}
	// The stream is closed: run what can run until nothing is left.
	t.ended = true
	if !t.tryRun() || !t.collect(true) {
		return nil, false
	}
	for _, w := range t.pending {
		p := w.raw
		_, err := r.exec.prepareCall(r.log, p)
		if j, ok := err.(interface{ Unwrap() []error }); ok && errors.Is(err, errBlocked) {
			err = j.Unwrap()[1] // the reference that is missing
		}
		if err == nil {
			err = errors.New("it was never run")
		}
		t.errs = append(t.errs, ErrorMessage(p, &CallError{Kind: Structural, Tool: planTool(p), Err: fmt.Errorf("never became ready: %w", err)}))
	}
	// The calls of this step are the plan of the next (012); errors of the
	// tick come last.
	if len(t.all) > 0 || r.lazy {
		plan := jsonfast.CompactArray(t.all) // the stream's elements are valid JSON
		if t.all == nil {
			plan = json.RawMessage("[]")
		}
		m := message.Message{Type: message.TypePlan, Plan: plan}
		if r.lazy {
			m.Extra = json.RawMessage(`{"mode":"lazy"}`)
			r.planned = slices.Clone(t.all)
		}
		if !r.appendOne(step, m) {
			return nil, false
		}
	}
	if !r.appendAll(step, t.errs) {
		return nil, false
	}
	return t.sol, true
}

// tick is the state of one step while its answer streams in and its calls
// run. The run keeps one and reuses it, with its slices, step after step.
type tick struct {
	r        *run
	ctx      context.Context
	step     int
	pending  []waiting // calls waiting for their references
	all      []json.RawMessage
	errs     []message.Message
	calls    int
	maxCalls int
	sol      *Solution
	ended    bool // the stream is closed
	stop     bool // the run ended
}

// event handles one event of the request's stream.
func (t *tick) event(ev Event, err error) bool {
	r := t.r
	if inv, ok := errors.AsType[*InvalidError](err); ok {
		t.errs = append(t.errs, message.Message{Type: message.TypeError,
			Error: "your answer was invalid and only its valid calls ran: " + inv.Err.Error()})
		return true
	}
	if err != nil {
		r.fail(err)
		t.stop = true
		return false
	}
	switch {
	case ev.Thinking != nil:
		if !r.emit(RunEvent{Kind: EventThinking, Step: t.step, Text: ev.Thinking.Text}) {
			t.stop = true
			return false
		}
	case ev.Element != nil:
		t.calls++
		if t.calls > t.maxCalls {
			r.fail(fmt.Errorf("%w (%d)", ErrMaxCalls, t.maxCalls))
			t.stop = true
			return false
		}
		if t.all == nil {
			t.all = make([]json.RawMessage, 0, 16)
		}
		t.all = append(t.all, ev.Element.Value)
		if r.lazy {
			return true // lazy mode: the model only plans
		}
		w := waiting{raw: ev.Element.Value, id: callID(t.step, t.calls-1)}
		if len(t.pending) > 0 {
			t.pending = append(t.pending, w)
			if !t.tryRun() {
				t.stop = true
				return false
			}
		} else if !t.tryOne(&w) { // what tryRun would do, without the list
			t.stop = true
			return false
		}
	case ev.Response != nil:
		r.usage.Add(ev.Response.Usage)
		if !r.emit(RunEvent{Kind: EventUsage, Step: t.step, Usage: &ev.Response.Usage}) {
			t.stop = true
			return false
		}
		t.sol = &ev.Response.Solutions[0]
		if !r.prep.build.props.Has("advisors") {
			break // no advisor is active: the solution has no opinions to read
		}
		if ops, err := t.sol.Opinions(); err != nil {
			t.errs = append(t.errs, message.Message{Type: message.TypeError, Error: err.Error()})
		} else if len(ops) > 0 {
			r.advice = ops
			if !r.emit(RunEvent{Kind: EventAdvice, Step: t.step, Opinions: ops}) {
				t.stop = true
				return false
			}
		}
	}
	if !t.collect(false) {
		t.stop = true
		return false
	}
	return true
}

// callIDs holds the IDs of the first calls of the first steps, made once:
// a run names every call it reads.
var callIDs = func() (ids [8][32]string) {
	for s := range ids {
		for c := range ids[s] {
			ids[s][c] = strconv.Itoa(s+1) + "." + strconv.Itoa(c)
		}
	}
	return ids
}()

// callID names call c (from 0) of step s (from 1): "2.0".
func callID(s, c int) string {
	if s >= 1 && s <= len(callIDs) && c >= 0 && c < len(callIDs[0]) {
		return callIDs[s-1][c]
	}
	var id [40]byte
	return string(strconv.AppendInt(append(strconv.AppendInt(id[:0], int64(s), 10), '.'), int64(c), 10))
}

// tryRun launches every pending call whose references resolve.
func (t *tick) tryRun() bool {
	r := t.r
	for i := 0; i < len(t.pending); i++ {
		w := &t.pending[i]
		if w.kind != "" && r.writes[w.kind] == w.seen {
			continue // nothing of the kind it waits for was written since
		}
		if w.at != nil {
			// Look the reference up before preparing the whole call again:
			// in a chain, most writes are not the one a call waits for.
			if !r.log.Resolves(w.call.Instance, w.at.Kind, w.at.Path) {
				w.seen = r.writes[w.kind]
				continue
			}
		}
		launched, errMsg, ok := r.launch(t.ctx, t.step, w)
		if !ok {
			return false
		}
		if launched || errMsg != nil {
			if errMsg != nil {
				t.errs = append(t.errs, *errMsg)
			}
			t.pending = slices.Delete(t.pending, i, i+1)
			i--
			continue
		}
		w.kind, w.at = r.blockedOn, r.blockedAt
		w.seen = r.writes[w.kind]
	}
	return true
}

// tryOne is tryRun for a new call w when none is pending: w joins the
// pending calls only if it waits for a reference.
func (t *tick) tryOne(w *waiting) bool {
	r := t.r
	launched, errMsg, ok := r.launch(t.ctx, t.step, w)
	if !ok {
		return false
	}
	switch {
	case errMsg != nil:
		t.errs = append(t.errs, *errMsg)
	case !launched:
		w.kind, w.at = r.blockedOn, r.blockedAt
		w.seen = r.writes[w.kind]
		t.pending = append(t.pending, *w)
	}
	return true
}

// collect takes finished calls; with block it waits until every call the
// step waits for has finished.
func (t *tick) collect(block bool) bool {
	r := t.r
	for r.running-r.bg > 0 || (r.bg > 0 && !block) {
		// Once the stream is closed and no call waits for a reference, the
		// run's goroutine has nothing to react to: it may run calls itself.
		// While calls wait, it may run one only when no other is running.
		h := helpNever
		switch {
		case t.ended && len(t.pending) == 0:
			h = helpAlways
		case t.ended:
			h = helpAlone
		}
		c, ok := r.pool.next(block, h)
		if !ok {
			return true
		}
		if !r.finish(t.step, c, &t.errs) || !t.tryRun() {
			return false
		}
	}
	return true
}

// launch confirms and starts a call if its references resolve.
func (r *run) launch(ctx context.Context, step int, w *waiting) (launched bool, errMsg *message.Message, ok bool) {
	raw := w.raw
	var c *Call
	var err error
	if w.call != nil { // parsed when it was first tried
		c, err = r.exec.prepare(r.log, w.call, true)
	} else {
		c, err = r.exec.prepareRaw(r.log, raw, true) // streamed: valid JSON
	}
	if errors.Is(err, errBlocked) {
		w.call = c
		r.blockedOn, r.blockedAt = "", nil
		if re, ok := errors.AsType[*ref.Error](err); ok && !strings.Contains(re.Expr, "||") {
			// With a fallback, a write of another kind may unblock it too.
			r.blockedOn = refKind(re.Ref)
			// The reference can be looked up alone where the call reads
			// it (its instance, then global data). A scoped call reads a
			// part of the log: not found there means not found in it.
			if c != nil {
				if at, ok := re.Target(); ok {
					r.blockedAt = &at
				}
			}
		}
		return false, nil, true
	}
	failed := func(c *Call, err error) (bool, *message.Message, bool) {
		c.ID = w.id
		m := ErrorMessage(c.Raw, err)
		return false, &m, r.emit(RunEvent{Kind: EventCallFailed, Step: step, Call: c, Err: err})
	}
	if err != nil {
		return failed(&Call{Raw: raw, Tool: planTool(raw)}, err)
	}
	if r.cfg.Confirm != nil {
		d, err := r.cfg.Confirm(ctx, c)
		switch {
		case err != nil:
			r.fail(fmt.Errorf("agent: confirm: %w", err))
			return false, nil, false
		case d.Reject != "":
			return failed(c, &CallError{Kind: "rejected", Tool: c.Tool, Err: errors.New(d.Reject)})
		case d.Replace != nil:
			if c, err = r.exec.prepareCall(r.log, bytes.Clone(d.Replace)); err != nil {
				return failed(&Call{Raw: d.Replace}, err)
			}
		}
	}
	c.ID = w.id
	a, explicit, err := c.resolveActivity(r.exec.reg)
	c.activity, c.resolved = a, err == nil
	if !keepsNoCall(c, a) {
		r.slab.exposed = true
	}
	bg := c.OutputPath == "" && explicit != ""
	// Started is yielded before the call runs: a durable run records it
	// first.
	if !r.emit(RunEvent{Kind: EventCallStarted, Step: step, Call: c}) {
		return false, nil, false
	}
	r.running++
	if bg {
		r.bg++
	}
	// r.exec, not the next step's, runs it: background calls outlive the step.
	r.pool.submit(job{ctx: ctx, x: r.exec, c: c, bg: bg, direct: r.direct})
	return true, nil, true
}

// finish records a completed call.
func (r *run) finish(step int, c completion, errs *[]message.Message) bool {
	r.running--
	if c.bg {
		r.bg--
	}
	if c.resp != nil {
		r.usage.Add(c.resp.Usage)
	}
	if c.direct {
		var wrote func(string)
		if r.counting() {
			wrote = r.wrote
		}
		err := r.log.AppendOutput(c.call.output, c.call.Raw, c.call.Instance, c.value, c.branch, c.date, wrote)
		if c.lent != nil { // the log copied the value
			c.lent.giveBack()
		}
		if err != nil {
			c.err = &CallError{Kind: Runtime, Tool: c.call.Tool, Err: err}
		}
	} else if !r.appendAll(step, c.msgs) {
		return false
	}
	if c.err != nil {
		*errs = append(*errs, ErrorMessage(c.call.Raw, c.err))
		return r.emit(RunEvent{Kind: EventCallFailed, Step: step, Call: c.call, Err: c.err})
	}
	return r.emit(RunEvent{Kind: EventCallFinished, Step: step, Call: c.call})
}

// appendOne is appendAll for one message that is not data; a quiet run
// appends it without an event, and without moving it to the heap.
func (r *run) appendOne(step int, m message.Message) bool {
	if !r.direct {
		return r.appendAll(step, []message.Message{m})
	}
	if err := r.log.Append(m); err != nil {
		r.fail(fmt.Errorf("agent: append: %w", err))
		return false
	}
	return true
}

// counting reports whether writes must be counted: only a waiting call
// reads the counts, against what they were when it last tried, and a
// call that starts to wait takes them as they are then.
func (r *run) counting() bool { return len(r.tick.pending) > 0 }

func (r *run) appendAll(step int, msgs []message.Message) bool {
	for i := range msgs {
		if msgs[i].Type == message.TypeData && r.counting() {
			r.writes[msgs[i].Kind]++
		}
		if err := r.log.Append(msgs[i]); err != nil {
			r.fail(fmt.Errorf("agent: append: %w", err))
			return false
		}
		if !r.emit(RunEvent{Kind: EventMessage, Step: step, Message: &msgs[i]}) {
			return false
		}
	}
	return true
}

// drainBackground waits for fire-and-forget calls before the run ends,
// so their errors are reported and no goroutine outlives the run.
func (r *run) drainBackground(ctx context.Context, step int) {
	var errs []message.Message
	for r.running > 0 {
		c, _ := r.pool.next(true, helpAlways)
		if !r.finish(step, c, &errs) {
			return
		}
	}
	r.appendAll(step, errs)
}

// wait lets every started call finish after the stream was abandoned:
// the consumer was told each of them runs. The run's context is cancelled
// by then, so they end soon.
func (r *run) wait() {
	for r.running > 0 {
		r.pool.next(true, helpAlways)
		r.running--
	}
}
