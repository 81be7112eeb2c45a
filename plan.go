package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/ref"
)

// PlanError reports an invalid plan: every problem found, in plan order.
type PlanError struct {
	Problems []PlanProblem
}

// Error says each problem once: the same problem of a call in several
// instances is said once, naming them ("call 0 (classify) instances 1, 2,
// 3: …"), as a plan run over a thousand inputs without a model would
// otherwise say the same a thousand times.
func (e *PlanError) Error() string {
	type said struct {
		p         PlanProblem
		instances []string // the instances it concerns, in order
	}
	var problems []*said
	index := map[string]*said{} // by the problem's text without its instance
	for _, p := range e.Problems {
		if p.Instance == "" {
			problems = append(problems, &said{p: p})
			continue
		}
		key := p.text("")
		s := index[key]
		if s == nil {
			s = &said{p: p}
			problems = append(problems, s)
			index[key] = s
		}
		s.instances = append(s.instances, p.Instance)
	}
	var b strings.Builder
	b.WriteString("agent: invalid plan: ")
	for i, s := range problems {
		if i > 0 {
			b.WriteString("; ")
		}
		label := ""
		switch n := len(s.instances); {
		case n == 1:
			label = "instance " + s.instances[0]
		case n > 1 && n <= 5:
			label = "instances " + strings.Join(s.instances, ", ")
		case n > 5:
			label = "instances " + strings.Join(s.instances[:5], ", ") + " and " + strconv.Itoa(n-5) + " more"
		}
		b.WriteString(s.p.text(label))
	}
	return b.String()
}

// Unwrap returns the problems, so errors.Is and errors.As see through the
// PlanError to the sentinel of each.
func (e *PlanError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// PlanProblem is one problem of a plan, located by the call and, where it
// concerns one, the parameter and the reference.
type PlanProblem struct {
	Call     int    // index of the call in the plan
	Tool     string // its _tool, "" if it has none
	Instance string // its _instance, if any
	Param    string // JSON pointer of the parameter, "/_outputPath" for the output path; "" for the whole call
	Ref      string // the reference or expression concerned, if any
	Err      error  // ErrCycle (as a *CycleError), ErrUnsatisfiable, ErrInvalidCall, ErrUnknownTool, ErrNoProvider, a *ref.Error, ...
}

// Error returns "call 1 (confirmOrder) param /receipt ref †state.receipt: …".
// The reference is left out where Err already quotes it.
func (p PlanProblem) Error() string {
	if p.Instance == "" {
		return p.text("")
	}
	return p.text("instance " + p.Instance)
}

// text is the problem's text, with instances, when not "", naming the
// instances it concerns.
func (p PlanProblem) text(instances string) string {
	var b strings.Builder
	b.WriteString("call ")
	b.WriteString(strconv.Itoa(p.Call))
	if p.Tool != "" {
		b.WriteString(" (" + p.Tool + ")")
	}
	if instances != "" {
		b.WriteString(" " + instances)
	}
	if p.Param != "" {
		b.WriteString(" param " + p.Param)
	}
	if re, ok := errors.AsType[*ref.Error](p.Err); p.Ref != "" && (!ok || re.Expr != p.Ref) {
		b.WriteString(" ref " + p.Ref)
	}
	if p.Err != nil {
		b.WriteString(": ")
		b.WriteString(inner(p.Err))
	}
	return b.String()
}

func (p PlanProblem) Unwrap() error { return p.Err }

// CycleError names the calls of a dependency cycle in data-flow order:
// each call writes what the next one reads, and the last is the first.
type CycleError struct {
	Calls []int
	Tools []string
}

func (e *CycleError) Error() string {
	var b strings.Builder
	b.WriteString(ErrCycle.Error())
	b.WriteString(": ")
	for i, c := range e.Calls {
		if i > 0 {
			b.WriteString(" → ")
		}
		b.WriteString(strconv.Itoa(c))
		if e.Tools[i] != "" {
			b.WriteString(" (" + e.Tools[i] + ")")
		}
	}
	return b.String()
}

func (e *CycleError) Unwrap() error { return ErrCycle }

// neverReady is why a call of an executed plan did not run. Its text is
// the loop's, so the model reads the same words either way.
type neverReady struct{ err error }

func (e neverReady) Error() string   { return "never became ready: " + inner(e.err) }
func (e neverReady) Unwrap() []error { return []error{ErrNeverReady, e.err} }

// PlanMode is how a plan runs (012): eager, the default, where planning
// is execution, or lazy, where the model only plans and the plan runs
// after it was checked and approved.
type PlanMode string

// The plan modes.
const (
	PlanEager PlanMode = "eager"
	PlanLazy  PlanMode = "lazy"
)

// LastPlan returns the calls of the last plan message of msgs and its
// mode (a "mode" property of the message; eager when absent). ok is false
// when msgs hold no plan message.
func LastPlan(msgs []message.Message) (calls []json.RawMessage, mode PlanMode, ok bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Type != message.TypePlan {
			continue
		}
		if err := json.Unmarshal(m.Plan, &calls); err != nil {
			return nil, PlanEager, false
		}
		mode, _ := planMode(m) // a request refuses a mode that is neither
		return calls, mode, true
	}
	return nil, PlanEager, false
}

// planMode returns the mode of the plan message m: eager when it names
// none, and an error when it names one that is neither eager nor lazy,
// so that a misspelt lazy does not run the calls meant to be approved.
func planMode(m *message.Message) (PlanMode, error) {
	var extra struct {
		Mode json.RawMessage `json:"mode"`
	}
	if m.Extra != nil {
		_ = json.Unmarshal(m.Extra, &extra)
	}
	if extra.Mode == nil || string(extra.Mode) == "null" {
		return PlanEager, nil
	}
	var mode PlanMode
	if json.Unmarshal(extra.Mode, &mode) != nil || mode != PlanEager && mode != PlanLazy {
		return PlanEager, errorf("plan mode %s: want eager or lazy", compact(extra.Mode))
	}
	return mode, nil
}

// CheckPlan checks what a plan says on its own, with no context: every
// call is a JSON object with a _tool, output paths, output methods,
// references and _scopes parse, and no call depends on itself through
// others (a reference in _scopes is read as one in the parameters). It
// returns a *PlanError listing every problem, or nil.
func CheckPlan(plan []json.RawMessage) error {
	g := analyse(plan, nil)
	g.findCycles()
	return g.err(0)
}

// ValidatePlan checks a plan before it runs (012) against the context it
// will run in: everything CheckPlan checks, plus that every tool is known
// and every reference can be satisfied.
//
// A tool is known when a tool message of the context defines it, as in a
// Request, or when it is registered in cfg.Registry with [Registry.Tool].
// A call's literal parameters must fit its tool. A reference, in a
// parameter or in the call's _scopes, can be satisfied when some call's
// _outputPath writes a related path (one is a prefix of the other; an
// instanced call's output is seen only by calls of that instance) or when
// the context has a value there; for an expression, when every reference
// of one alternative can. It returns a
// *PlanError listing every problem, in plan order, or nil. Errors of the
// context itself (a malformed message, an unknown tool message) are
// returned as they are.
func ValidatePlan(ctx context.Context, cfg Config, plan []json.RawMessage, context []message.Message) error {
	return validatePlan(ctx, cfg, plan, 0, context)
}

// validatePlan validates calls against context; with a stride, calls are
// a template's copies (see ValidatePlanInstances).
func validatePlan(ctx context.Context, cfg Config, calls []json.RawMessage, stride int, context []message.Message) error {
	log, err := message.NewLog(context...)
	if err != nil {
		return errorf("agent: context: %w", err)
	}
	x, err := planExecutor(ctx, cfg, log)
	if err != nil {
		return err
	}
	g := analyse(calls, x)
	g.validate(x, log)
	return g.err(stride)
}

// ExecutePlan runs a plan against a context without asking the model to
// plan (012): each call starts as soon as the calls whose output it reads
// have finished and its references resolve, at most cfg.Concurrency at
// once (DefaultConcurrency when 0), each completion possibly unblocking
// others. Output messages are appended to the log as calls finish;
// cfg.Confirm sees every call before it runs. A plan of explicit calls
// (an Activity resolves for each tool) needs no provider; a latent call
// without an inline _output needs cfg.Provider, which produces its result.
//
// The plan is validated first (see [ValidatePlan]); an invalid plan, or a
// latent call with no provider, is a *PlanError and nothing runs. Calls
// that fail do not stop the others: an activity's error goes to the last
// branch of a branching _outputPath, calls whose references never
// resolve are reported too (ErrNeverReady), and when nothing is left to
// run the plan itself and then an error message per failed call, in plan
// order, are appended, as a step of the loop does. The plan message is
// not repeated when it is already the last plan of the context.
//
// Every call is waited for, fire-and-forget ones (explicit, without
// _outputPath) included, so no goroutine outlives the execution.
//
// Cancelling ctx stops starting calls and waits for those running; the
// *LimitError returned then holds the log as it was. RunResult.Solution
// is nil and Steps 0: no request was made.
func ExecutePlan(ctx context.Context, cfg Config, plan []json.RawMessage, context []message.Message) (*RunResult, error) {
	return Collect(PlanEvents(ctx, cfg, plan, context))
}

// PlanEvents is ExecutePlan as a stream of events: call started, finished
// and failed, every message appended, and done with the result (Step is
// 0). It is single-use and runs on the caller's goroutine; calls run on
// goroutines of their own. Breaking out of the stream cancels the running
// calls and waits for them.
func PlanEvents(ctx context.Context, cfg Config, plan []json.RawMessage, context []message.Message) iter.Seq2[RunEvent, error] {
	return planEvents(ctx, cfg, plan, nil, context)
}

// lazyPrompt asks the model to plan without executing (012, lazy mode).
// It is part of replay: keep it stable.
const lazyPrompt = "## Planning only\n" +
	"Lazy mode: write the complete plan as calls, and do not carry out any of them. " +
	"Do not write _output for any call: every call runs after the plan is checked and approved. " +
	"Wire the calls together with _outputPath and references (†kind.path), " +
	"and keep a branching _outputPath (†state.ok || †state.failed) as it is: the branch is chosen when the plan runs. " +
	"Leave output null unless the answer needs no call."

// Plan asks the model for a plan without running it (012, lazy mode):
// one Request whose context ends with an instruction to only plan, whose
// calls are returned unexecuted and checked with [ValidatePlan] against
// the context given. The caller can show the calls for approval, change
// them, and run them with [ExecutePlan]. An invalid plan returns the
// solution and its calls with the *PlanError. Plan asks for one solution
// (cfg.N is ignored).
func Plan(ctx context.Context, cfg Config, schema json.RawMessage, context []message.Message) (*Solution, []json.RawMessage, error) {
	// The instruction is the user's last word, not a system message, which
	// providers with a separate system parameter (Anthropic, Gemini) send
	// in place only tagged as one.
	msgs := append(context[:len(context):len(context)], message.Text(lazyPrompt))
	cfg.N, cfg.lazy = 1, true
	resp, err := Request(ctx, cfg, schema, msgs)
	if err != nil {
		return nil, nil, err
	}
	sol := &resp.Solutions[0]
	// The calls to approve are the caller's, apart from the solution's.
	calls := make([]json.RawMessage, len(sol.Calls))
	for i, c := range sol.Calls {
		calls[i] = bytes.Clone(c)
	}
	if err := ValidatePlan(ctx, cfg, calls, context); err != nil {
		return sol, calls, err
	}
	return sol, calls, nil
}

// planExecutor prepares the tools of a context for validating and
// running a plan: those of the context's tool messages, as a Request
// defines them, and those registered in the registry that the context
// does not define.
func planExecutor(ctx context.Context, cfg Config, log *message.Log) (*executor, error) {
	reg := cfg.registry()
	p, err := prepareBuild(ctx, cfg, nil, log, true, false)
	if err != nil {
		return nil, err
	}
	reg.mu.RLock()
	names := slices.Sorted(maps.Keys(reg.tools))
	defs := make([]json.RawMessage, len(names))
	for i, n := range names {
		defs[i] = reg.tools[n]
	}
	reg.mu.RUnlock()
	for i, n := range names {
		if p.build.shape(n) != nil {
			continue
		}
		if err := defineTool(p.build, n, defs[i]); err != nil {
			return nil, errorf("agent: %w", err)
		}
	}
	if cfg.tree == nil { // a plan's delegates share its budget, and it warns once, not once a call
		cfg.tree = new(runTree)
	}
	return &executor{cfg: &cfg, reg: reg, build: p.build}, nil
}

// samePlan reports whether the last plan message of msgs is plan.
func samePlan(msgs []message.Message, plan json.RawMessage) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == message.TypePlan {
			// A lazy plan that runs is a plan that ran: the log says so
			// with a plan message of its own, or a later request would
			// tell the model that nothing runs until it is approved, and
			// a later run would only plan.
			if mode, _ := planMode(&msgs[i]); mode == PlanLazy {
				return false
			}
			var a, b bytes.Buffer
			return json.Compact(&a, msgs[i].Plan) == nil && json.Compact(&b, plan) == nil && bytes.Equal(a.Bytes(), b.Bytes())
		}
	}
	return false
}

// planEvents runs plan, or with in, plan as a template once per instance.
func planEvents(ctx context.Context, cfg Config, plan []json.RawMessage, in *instancing, msgs []message.Message) iter.Seq2[RunEvent, error] {
	return func(yield func(RunEvent, error) bool) {
		ctx, cancel := context.WithCancelCause(runContext(ctx, cfg))
		defer cancel(nil)
		msgs, log, err := contextLog(&cfg, msgs)
		if err != nil {
			yield(RunEvent{}, err)
			return
		}
		// Settings no request could be made with fail before any call
		// runs or a run is created, as a loop's do.
		if err := cfg.check(); err != nil {
			yield(RunEvent{}, err)
			return
		}
		var usage provider.Usage
		if cfg.resume != nil {
			usage = cfg.resume.usage
		}
		result := func() *RunResult { return &RunResult{Log: log, Usage: usage, RunID: cfg.RunID} }
		// The plan is checked before the journal takes the run: a resume
		// that cannot run it (a tool its registry lacks) gives the run back
		// as it found it, as a loop's does. A new run is created failed.
		calls := plan
		if in != nil {
			calls = in.expand(plan)
		}
		x, err := planExecutor(ctx, cfg, log)
		if x != nil {
			// The budget counts what the run spent before the resume,
			// as a resumed loop's does.
			x.cfg.tree.spent.Add(int64(usage.Total()))
		}
		g := analyse(calls, x)
		if err == nil {
			g.validate(x, log)
			g.executable(x)
			stride := 0
			if in != nil {
				stride = len(plan) // problems name the template call
			}
			err = g.err(stride)
		}
		if err != nil && cfg.resume != nil {
			yield(RunEvent{}, err)
			return
		}
		var j *journal
		if cfg.Store != nil {
			var jerr error
			if j, jerr = openJournal(ctx, cfg, kindPlan, runSpec{Plan: plan, Instanced: in != nil}, msgs, cancel); jerr != nil {
				yield(RunEvent{}, jerr)
				return
			}
			cfg.RunID = j.run.ID
			if x != nil {
				x.cfg.RunID = cfg.RunID // x was made before the journal named the run
			}
			// Calls settle and start in groups: one Append per group, made
			// before any call of the group runs.
			j.result, j.batch = result, true
			var finish func()
			yield, finish = j.wrap(ctx, yield)
			defer finish()
		}
		if err != nil {
			yield(RunEvent{}, err)
			return
		}
		s := newScheduler(&stream{yield: yield}, &cfg, log, &usage, result)
		if j != nil {
			s.flush = j.flush
		}
		s.stop = func() { cancel(nil) }
		defer func() {
			cancel(nil) // stop calls still running, then wait for them
			s.wait()
		}()
		for _, t := range planTasks(g, x, cfg.resume) {
			if t.left == 0 { // the others join as what they read settles
				s.add(t)
			}
		}
		if !s.runDown(ctx, true) {
			return
		}
		if s.cutShort(ctx) {
			// As a loop's cut step: the plan and its calls' errors stay
			// out of the log (and the journal) until it is whole, after
			// every output, as in a run that was not cut; a resume finds
			// the settled errors in the journal.
			s.fail(ctx.Err())
			return
		}
		var tail []message.Message
		if p := planOf(plan); len(plan) > 0 && !samePlan(msgs, p) {
			tail = append(tail, message.Message{Type: message.TypePlan, Plan: p})
		}
		slices.SortStableFunc(s.errs, func(a, b taskError) int { return a.index - b.index }) // in plan order
		if !s.appendAll(append(tail, s.takeErrors()...)) {
			return
		}
		if err := ctx.Err(); err != nil {
			s.fail(err)
			return
		}
		res := result()
		s.emit(RunEvent{Kind: EventDone, Usage: &res.Usage, Result: res})
	}
}

// planTasks returns the calls of an analysed plan as tasks, in plan
// order, each waiting for the calls it reads. A call that settled in an
// earlier attempt of the run does not run again.
func planTasks(g *planGraph, x *executor, rs *resumed) []*task {
	tasks := make([]*task, len(g.byIndex))
	for _, n := range g.nodes {
		id := strconv.Itoa(n.index)
		t := &task{raw: n.raw, id: id, index: n.index, instance: n.call.Instance, exec: x, left: len(n.after)}
		t.prepare = func(log *message.Log) (*Call, error) {
			c, err := x.preparePlanned(log, n.raw, &n.call, n.out)
			if err == nil {
				err = x.interrupted(rs, id, c)
			}
			return c, err
		}
		if rs != nil {
			t.errMsg, t.prior = rs.settled[id]
			if rs.logged[id] { // its error message is in the log already
				t.errMsg = nil
			}
			_, t.approved = rs.started[id]
		}
		tasks[n.index] = t
	}
	for _, n := range g.nodes {
		for _, w := range n.after {
			tasks[w].readers = append(tasks[w].readers, tasks[n.index])
		}
	}
	return slices.DeleteFunc(tasks, func(t *task) bool { return t == nil })
}
