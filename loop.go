package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync/atomic"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
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
	EventOutput       EventKind = "output"        // a piece of the output as the model writes it
	EventCallQueued   EventKind = "call.queued"   // the model wrote a call: it starts once what it reads is there and Confirm approved it
	EventCallStarted  EventKind = "call.started"  // a call was confirmed and runs
	EventCallFinished EventKind = "call.finished" // a call wrote its result
	EventCallFailed   EventKind = "call.failed"   // a call failed; its error message follows at the end of the tick
	EventMessage      EventKind = "message"       // a message was appended to the log
	EventUsage        EventKind = "usage"         // usage of a request, valid answer or not (with Call: the call's own)
	EventAdvice       EventKind = "advice"        // the advisors' opinions of a solution (017)
	EventDone         EventKind = "done"          // the run ended with an output
	EventCompacted    EventKind = "compacted"     // the rendered context was compacted; Text says from and to what size
)

// RunEvent is one thing that happened during a run.
type RunEvent struct {
	Kind    EventKind
	Step    int
	Call    *Call            // call events
	Err     error            // EventCallFailed
	Message *message.Message // EventMessage
	Text    string           // EventThinking; EventCompacted: the sizes before and after
	Output  *Output          // EventOutput
	Usage   *provider.Usage  // EventUsage: the request's; EventDone: the run's
	// UsageLost says, on EventUsage, that Usage lacks what a provider
	// call was billed, which the provider did not say: its stream broke
	// after the answer, before the usage, or the server does not report
	// usage (Response.UsageLost).
	UsageLost bool
	Result    *RunResult // EventDone
	// Opinions are the advisors' entries of the step's solution, with
	// their votes (EventAdvice); Tally weighs them.
	Opinions []Opinion
	// byCall marks a message a call wrote as it returned (EventMessage):
	// a durable run keeps it out of the journal if the call was cut short.
	byCall bool
	// stepEnds marks a step's usage (EventUsage) after which nothing of
	// the step is left to run: the journal's next write, which ends the
	// step, follows without waiting on anything, and takes the usage too.
	stepEnds bool
}

// Run runs the agent loop (010): it makes Requests until a solution has an
// output, running the calls of each solution as they stream in. It is
// Events, collected.
func Run(ctx context.Context, cfg Config, schema json.RawMessage, msgs []message.Message) (*RunResult, error) {
	return Collect(Events(ctx, cfg, schema, msgs))
}

// Collect returns the result of a run's events, as Run, ExecutePlan and
// Resume do: the done event's, or, when the run fails, the log as it was
// then (from a *LimitError) with the error. A program that wraps a run's
// events (to trace or filter them) collects them with it.
func Collect(events iter.Seq2[RunEvent, error]) (*RunResult, error) {
	var res *RunResult
	for ev, err := range events {
		if err != nil {
			if le, ok := errors.AsType[*LimitError](err); ok {
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

// runContext puts the run's clock and fan-out on ctx.
func runContext(ctx context.Context, cfg Config) context.Context {
	return platform.WithFanout(platform.WithClock(ctx, cfg.Clock), cfg.Fanout)
}

// loopEvents runs the loop from step first.
func loopEvents(ctx context.Context, cfg Config, schema json.RawMessage, msgs []message.Message, first int, yield func(RunEvent, error) bool) {
	ctx, cancel := context.WithCancelCause(runContext(ctx, cfg))
	defer cancel(nil)
	rs := cfg.resume
	continued := rs != nil && rs.continued
	msgs, log, err := contextLog(&cfg, msgs)
	if err != nil {
		if continued {
			err = rs.refused(cfg.RunID, err)
		}
		yield(RunEvent{}, err)
		return
	}
	if err := cfg.check(); err != nil {
		if continued {
			err = rs.refused(cfg.RunID, err)
		}
		yield(RunEvent{}, err)
		return
	}
	if rs == nil || continued { // a resume has it from the run's spec
		cfg.contextLen = log.Len()
	}
	if cfg.tree == nil { // a delegate's sub-run shares its parent's
		cfg.tree = new(runTree)
	}
	r := &run{cfg: cfg, schema: schema, log: log, steps: first - 1}
	if continued || rs == nil && cfg.Store != nil {
		// The first request is prepared before the journal takes the
		// context (or a turn's messages), and goes on as the first step's
		// request (see prepareNext): a message the handlers refuse fails
		// Run before the run is created, and Continue with the run as it
		// was, where journaled it would fail this request and every
		// resume's after it.
		r.lazy = lazyPlan(log)
		if r.last, err = prepareBuild(ctx, r.stepConfig(), schema, log, false, !r.lazy); err != nil {
			if continued {
				err = rs.refused(cfg.RunID, err)
			} else {
				err = refusal{err} // no run was created
			}
			yield(RunEvent{}, err)
			return
		}
	}
	var flush func(context.Context) error
	if cfg.Store != nil {
		if rs != nil {
			r.usage = rs.usage // every request of the run so far
			r.seen = rs.seen
			r.turnStep, r.turnTokens = rs.turnStep, rs.turnTokens
		}
		j, err := openJournal(ctx, cfg, kindLoop, runSpec{Schema: schema, Context: cfg.contextLen}, msgs, cancel)
		if err != nil {
			yield(RunEvent{}, err)
			return
		}
		r.cfg.RunID = j.run.ID
		// Calls start and settle in groups: one Append per group, made
		// before any call of the group runs.
		j.result, j.batch = func() *RunResult { return r.result(nil, r.steps) }, true
		flush = j.flush
		var finish func()
		yield, finish = j.wrap(ctx, yield)
		defer finish()
	}
	// The turn's tokens so far count towards the budget; a delegate's
	// sub-run counts into its parent's.
	r.cfg.tree.spent.Add(int64(r.usage.Total() - r.turnTokens))
	r.yield = yield
	r.sched = newScheduler(&r.stream, &r.cfg, log, &r.usage, func() *RunResult { return r.result(nil, r.steps) })
	r.sched.flush, r.sched.stop = flush, func() { cancel(nil) }
	defer func() {
		cancel(nil) // stop calls still running, then wait for them
		r.sched.wait()
	}()
	if rs != nil && !r.finish(ctx, rs) {
		return
	}
	r.loop(ctx, first)
}

// run is the state of one agent loop.
type run struct {
	stream
	cfg    Config
	schema json.RawMessage
	log    *message.Log
	usage  provider.Usage
	steps  int // the requests made, as RunResult.Steps counts them
	sched  *scheduler
	last   *prepared // the last step's request
	// seen is, for a resumed run, how many messages of the log the
	// request its first request goes on from was sent with (0: none).
	seen int
	// turnStep and turnTokens are the steps and tokens of the run's
	// turns before this one (Continue): the limits are the turn's.
	turnStep, turnTokens int

	lazy    bool              // the context's plan is lazy: plan, do not run
	planned []json.RawMessage // the calls of a lazy run
	advice  []Opinion         // the last advisors' opinions
}

// stream is the consumer's side of a run's events: it never yields again
// once the consumer stopped or an error was yielded.
type stream struct {
	yield   func(RunEvent, error) bool
	stopped bool
}

func (s *stream) emit(ev RunEvent) bool {
	if s.stopped {
		return false
	}
	if ev.Call != nil {
		ev.Call = ev.Call.handed()
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
	s.yield(RunEvent{}, &LimitError{Err: err, Result: res})
	s.stopped = true
}

func (r *run) fail(err error) {
	if r.sched != nil {
		r.sched.settleRunning()
	}
	r.end(err, r.result(nil, r.steps))
}

func (r *run) result(sol *Solution, steps int) *RunResult {
	return &RunResult{Solution: sol, Log: r.log, Usage: r.usage, Steps: steps, RunID: r.cfg.RunID, Advice: r.advice}
}

func (r *run) loop(ctx context.Context, first int) {
	maxSteps := r.cfg.MaxSteps
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	r.lazy = lazyPlan(r.log)
	for step := first; ; step++ {
		if step-r.turnStep > maxSteps {
			r.fail(fmt.Errorf("%w (%d)", ErrMaxSteps, maxSteps))
			return
		}
		if used := int(r.cfg.tree.spent.Load()); r.cfg.TokenBudget > 0 && used >= r.cfg.TokenBudget {
			r.fail(fmt.Errorf("%w: used %d of %d tokens", ErrTokenBudget, used, r.cfg.TokenBudget))
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
		if r.sched.cutShort(ctx) {
			// The step's calls were cut short: the run did not end, even
			// when the model gave its output.
			r.fail(ctx.Err())
			return
		}
		if r.lazy { // one request: the plan is the result
			res := r.result(sol, step)
			res.Plan = r.planned
			r.emit(RunEvent{Kind: EventDone, Step: step, Usage: &res.Usage, Result: res})
			return
		}
		if sol != nil && sol.Done() {
			// Fire-and-forget calls end before the run does, so their
			// errors are reported and nothing outlives the run.
			if !r.sched.runDown(ctx, true) || !r.sched.appendAll(r.sched.takeErrors()) {
				return
			}
			if r.sched.cutShort(ctx) {
				r.fail(ctx.Err())
				return
			}
			res := r.result(sol, step)
			r.emit(RunEvent{Kind: EventDone, Step: step, Usage: &res.Usage, Result: res})
			return
		}
	}
}

// lazyPlan reports whether the last plan of log is lazy: the run then
// only plans.
func lazyPlan(log *message.Log) bool {
	i, _ := log.LastOf(message.TypePlan)
	if i < 0 {
		return false
	}
	_, mode, ok := LastPlan([]message.Message{log.At(i)})
	return ok && mode == PlanLazy
}

// stepConfig is the config of a step's request.
func (r *run) stepConfig() Config {
	cfg := r.cfg
	// Calls run as they stream in, so a solution cannot be re-asked
	// quietly: an invalid one becomes an error message for the next step.
	cfg.CallbackPath, cfg.N, cfg.MaxRepairs, cfg.lazy, cfg.ticks = "calls", 1, -1, r.lazy, true
	return cfg
}

// step makes one request and runs its calls as they stream in: the
// reactive orchestrator of page 010.
func (r *run) step(ctx context.Context, step int) (*Solution, bool) {
	cfg := r.stepConfig()
	r.sched.step = step
	// Each call is checked against its tool as it streams in, and a bad
	// one is an error of that call: the solution is checked with calls as
	// any objects (a lazy run's plan is checked whole).
	if r.last == nil && r.seen > 0 && r.seen < r.log.Len() && cfg.Rendering != RenderSnapshot {
		// Resumed: the request goes on from the one the interruption
		// followed, which the provider's cache may hold.
		last, err := prepareSeen(ctx, cfg, r.schema, r.log, !r.lazy, r.seen)
		if err != nil {
			r.fail(err)
			return nil, false
		}
		r.last = last
	}
	p, err := prepareNext(ctx, cfg, r.schema, r.log, !r.lazy, r.last)
	if limit := compactAt(&r.cfg); err == nil && limit > 0 && compactNow(p, limit) {
		p, err = r.compact(ctx, cfg, step, p)
	}
	if err != nil {
		r.fail(err)
		return nil, false
	}
	if step == 1 && len(p.build.tools.Keys) == 0 {
		r.warnNoTools(ctx)
	}
	r.last = p
	r.steps = step
	s := r.sched
	s.step, s.stepEnd = step, false
	// With advisors active, the step's calls wait for their opinions,
	// which the model writes first (017).
	cfg.advising = p.build.advice != nil
	advised := !cfg.advising
	var held []*task
	// The step's executor serves its calls until they end, maybe past the
	// step (fire-and-forget ones).
	// The calls run with the run's settings, not the step request's: a
	// latent call or a delegate makes requests of its own, which are
	// repaired (Config.MaxRepairs) as any Request's are.
	xcfg := r.cfg
	exec := &executor{cfg: &xcfg, reg: xcfg.registry(), build: p.build}
	advise := func(raw json.RawMessage) bool {
		if advised {
			return true
		}
		advised = true
		if !r.advised(step, exec, raw) {
			return false
		}
		for _, t := range held {
			if t.left == 0 { // the others join as their writers settle
				s.add(t)
			}
		}
		held = nil
		return s.start(ctx)
	}
	maxCalls := r.cfg.MaxCallsPerStep
	if maxCalls <= 0 {
		maxCalls = DefaultMaxCallsPerStep
	}
	var calls []json.RawMessage // as the model wrote them: the step's plan
	var tasks []*task           // the step's calls to run
	dropped := false            // asWritten took nulls out of one
	var sol *Solution
	ok := true
	p.stream(ctx, cfg, func(ev Event, err error) bool {
		if inv, isInv := errors.AsType[*InvalidError](err); isInv {
			text := "your answer was invalid and only its valid calls ran: " + inv.Err.Error()
			if errors.Is(inv.Err, ErrAnswerCut) {
				// Said so, the model can write less at once; a JSON
				// syntax error alone would have it try the same again.
				text = "your answer reached the output token limit and was cut off; only the calls written before the cut ran. Make fewer or shorter calls at a step."
			}
			s.errs = append(s.errs, taskError{len(calls), message.Message{Type: message.TypeError, Error: text}})
			// An invalid answer costs all the same.
			r.usage.Add(inv.Usage)
			ok = r.emit(RunEvent{Kind: EventUsage, Step: step, Usage: &inv.Usage})
			return ok
		}
		if err != nil {
			// A failed request may be billed all the same: its usage
			// counts towards the budget, and is journaled, first.
			if u := UsageOf(err); u != (provider.Usage{}) {
				r.usage.Add(u)
				r.emit(RunEvent{Kind: EventUsage, Step: step, Usage: &u})
			}
			// The step says where in a long run the model failed.
			r.fail(errorf("agent: step %d: %w", step, err))
			ok = false
			return false
		}
		switch {
		case ev.Thinking != nil:
			ok = r.emit(RunEvent{Kind: EventThinking, Step: step, Text: ev.Thinking.Text})
		case ev.Output != nil:
			ok = r.emit(RunEvent{Kind: EventOutput, Step: step, Output: ev.Output})
		case ev.Element != nil:
			if len(calls) == maxCalls {
				r.fail(fmt.Errorf("%w (%d)", ErrMaxCalls, maxCalls))
				ok = false
				return false
			}
			raw := exec.asWritten(ev.Element.Value)
			dropped = dropped || len(raw) != len(ev.Element.Value)
			calls = append(calls, bytes.Clone(raw))
			if !r.lazy { // lazy mode: the model only plans
				t := &task{raw: raw, id: callID(step, len(calls)-1), index: len(calls) - 1, exec: exec}
				ready := waitForWriters(t, tasks)
				tasks = append(tasks, t)
				// Queued is yielded before the call can start: a durable
				// run records it first, so a resume finds it even if it
				// was still waiting when the run stopped.
				if ok = r.emit(RunEvent{Kind: EventCallQueued, Step: step, Call: &Call{Raw: t.raw, ID: t.id, Tool: planTool(t.raw)}}); !ok {
					break
				}
				if !advised {
					held = append(held, t)
					break
				}
				if ready {
					s.add(t) // it starts with the others of its chunk, at the tick
				}
			}
		case ev.tick:
			ok = s.start(ctx)
		case ev.advisors != nil:
			ok = advise(exec.asWrittenAdvice(ev.advisors))
		case ev.Response != nil:
			sol = &ev.Response.Solutions[0]
			if dropped {
				withCalls(sol, calls)
			}
			// The answer is whole: the stream ends here (see stepEnd).
			s.stepEnd = true
			ends := s.running == 0 && len(s.waiting) == 0 && len(held) == 0
			ok = r.answered(step, ev.Response, ends) && advise(sol.Field("advisors"))
		}
		ok = ok && s.poll(ctx)
		return ok
	})
	// The stream is closed: run what can run until nothing is left (an
	// invalid answer ends it with no response: its calls run unadvised).
	s.stepEnd = true
	if !ok || r.stopped || !advise(nil) || !s.runDown(ctx, false) {
		return nil, false
	}
	if s.cutShort(ctx) {
		// The step did not end: its plan and its calls' errors stay out of
		// the log (and the journal), and the loop stops; a resume ends the
		// step. A notice about the answer itself stays.
		var notices []message.Message
		for _, m := range s.takeErrors() {
			if m.Failed == nil {
				notices = append(notices, m)
			}
		}
		return sol, s.appendAll(notices)
	}
	// The calls of this step are the plan of the next (012); errors of the
	// tick come last.
	if len(calls) > 0 || r.lazy {
		m := message.Message{Type: message.TypePlan, Plan: planOf(calls)}
		if r.lazy {
			m.Extra = json.RawMessage(`{"mode":"lazy"}`)
			r.planned = calls
		}
		if !s.appendAll([]message.Message{m}) {
			return nil, false
		}
	}
	if !s.appendAll(s.takeErrors()) {
		return nil, false
	}
	return sol, true
}

// compact appends a compaction message (see compaction.go) and prepares
// the step's request again: its Build handles the one new message.
func (r *run) compact(ctx context.Context, cfg Config, step int, p *prepared) (*prepared, error) {
	before := estimateTokens(p)
	if !r.sched.appendAll([]message.Message{{Type: message.TypeCompaction}}) {
		return nil, errStopped
	}
	p, err := prepareNext(ctx, cfg, r.schema, r.log, !r.lazy, p)
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("compacted the rendered context from ~%d to ~%d tokens", before, estimateTokens(p))
	if !r.emit(RunEvent{Kind: EventCompacted, Step: step, Text: text}) {
		return nil, errStopped
	}
	return p, nil
}

// warnNoTools logs a warning when a run's context offers no tool while
// its registry holds activities: registering a tool does not offer it, so
// the model can call none of them and the run is most likely to end at
// its first answer. A context without tools is legitimate (a Request in a
// loop), so this is a warning, not an error; delegates' sub-runs, whose
// Ideas rarely have tools, do not warn.
func (r *run) warnNoTools(ctx context.Context) {
	if depth, _ := ctx.Value(depthKey{}).(int); depth > 0 {
		return
	}
	if names := r.cfg.registry().ActivityNames(); len(names) > 0 {
		logger(r.cfg).WarnContext(ctx, "the context offers no tool, so the model cannot call the registered activities; offer tools with tool messages (message.Tool, Registry.Offer)",
			"activities", names)
	}
}

// runTree is what a run and its delegates' sub-runs share (Config.tree
// is copied with the Config).
type runTree struct {
	// spent counts the tokens the run's turn spent, against its
	// TokenBudget, so that sub-runs running at once do not each spend
	// what the budget has left.
	spent atomic.Int64
	// usageWarned says that the warning of a usage not said was logged:
	// a server that never says it would have it at every step otherwise.
	usageWarned atomic.Bool
}

// answered takes the usage of the step's response; ends says nothing
// of the step is left to run (see RunEvent.stepEnds).
func (r *run) answered(step int, resp *Response, ends bool) bool {
	r.usage.Add(resp.Usage)
	return r.emit(RunEvent{Kind: EventUsage, Step: step, Usage: &resp.Usage, UsageLost: resp.UsageLost, stepEnds: ends})
}

// advised takes the advisors' opinions of the step (raw is the
// solution's advisors property): the executor weighs its calls by them.
// Malformed votes are an error the model reads next step, and the calls
// run unadvised.
func (r *run) advised(step int, exec *executor, raw json.RawMessage) bool {
	ops, err := opinionsOf(raw)
	if err != nil {
		r.sched.errs = append(r.sched.errs, taskError{-1, message.Message{Type: message.TypeError, Error: err.Error()}})
		return true
	}
	if len(ops) == 0 {
		return true
	}
	exec.council, r.advice = ops, ops
	// The event reaches user code before the calls are weighed: it gets
	// its own copy, so that what it does to it changes neither the tally
	// nor the run's result.
	return r.emit(RunEvent{Kind: EventAdvice, Step: step, Opinions: cloneOpinions(ops)})
}

// withCalls gives sol the calls of its step as they ran, without the
// nulls asWritten took out of them: the answer was validated with calls
// as any objects, which kept those.
func withCalls(sol *Solution, calls []json.RawMessage) {
	o, err := ojson.Parse(sol.Raw)
	if err != nil || len(sol.Calls) != len(calls) {
		return
	}
	o.Set("calls", planOf(calls))
	sol.Raw = o.Bytes()
	for i, c := range calls {
		sol.Calls[i] = bytes.Clone(c)
	}
}

// planOf joins calls into a plan: a JSON array of them, compacted,
// without HTML escaping.
func planOf(calls []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, c := range calls {
		if i > 0 {
			b.WriteByte(',')
		}
		if json.Compact(&b, c) != nil {
			b.Write(c)
		}
	}
	b.WriteByte(']')
	return b.Bytes()
}

// callID names call c (from 0) of step s (from 1): "2.0".
func callID(s, c int) string { return strconv.Itoa(s) + "." + strconv.Itoa(c) }
