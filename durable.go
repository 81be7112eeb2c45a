package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
)

// Errors of durable runs.
var (
	// ErrInterrupted marks a call that started before its run stopped and
	// never settled: it may or may not have had its effect. Resume runs
	// it again only when its activity is Idempotent, or when it is latent
	// (a request to the model, with no effect outside the run).
	ErrInterrupted = errors.New("agent: interrupted: the call started before the run stopped and did not finish; its activity is not idempotent, so it was not run again")
	// ErrMissingActivity reports a Resume or Continue whose registry
	// lacks activities that the run's tools had when it was made: those
	// tools would be latent, and the model would make up what the code
	// computed. Register them, as the program that made the run did.
	ErrMissingActivity = errors.New("agent: the registry lacks activities the run's tools had, so the model would make up their results")
	// ErrNoStore reports Resume or Continue without Config.Store.
	ErrNoStore = errors.New("agent: no store")
	// ErrUnfinished reports Continue of a run that has not finished:
	// one that failed, was interrupted, or is running with no one
	// holding it (its process died). Resume it first.
	ErrUnfinished = errors.New("agent: the run has not finished")
	// ErrNotLoop reports Continue of a run that is not a loop's (a plan
	// run has no conversation to go on with).
	ErrNotLoop = errors.New("agent: not a loop run")
	// ErrRefused marks an error of Resume or Continue that stopped it
	// before it changed the run: the run is in its store as it was (a run
	// another process holds, an unfinished one Continue was given, a
	// message the turn's first request cannot use, ...); and an error
	// of a durable Run that stopped it before the run was created (its
	// first request cannot be made). The error wraps it besides the
	// reason, so errors.Is finds both.
	ErrRefused = errors.New("agent: refused")
)

// refusal is an error of Resume or Continue that left the run as it was,
// or of Run that created none.
type refusal struct{ err error }

func (r refusal) Error() string        { return r.err.Error() }
func (r refusal) Unwrap() error        { return r.err }
func (r refusal) Is(target error) bool { return target == ErrRefused }

// Idempotent marks an activity as safe to run twice with the same call,
// so that Resume runs it again when a crash left it unfinished.
func Idempotent(a Activity) Activity { return idempotent{a} }

type idempotent struct{ Activity }

func (idempotent) Idempotent() bool { return true }

// isIdempotent reports whether an activity was marked with Idempotent.
func isIdempotent(a Activity) bool {
	i, ok := a.(interface{ Idempotent() bool })
	return ok && i.Idempotent()
}

// Run kinds, as recorded in store.Run.Kind.
const (
	kindPlan = "plan"
	kindLoop = "loop"
)

// runSpec is what a run needs to resume beyond its journal (store.Run.Spec).
type runSpec struct {
	Plan      []json.RawMessage `json:"plan,omitempty"`      // plan runs: the plan, or the template
	Instanced bool              `json:"instanced,omitempty"` // plan runs: the plan is a template run per instance
	Schema    json.RawMessage   `json:"schema,omitempty"`    // loop runs: the solution schema
	Context   int               `json:"context,omitempty"`   // loop runs: how many messages the context had (Config.contextLen)
	// Turns are, for a loop run continued (Continue), the Context of each
	// turn before the current one, in order: a fork at a message of an
	// earlier turn resumes with that turn's (see contextAt).
	Turns []int `json:"turns,omitempty"`
	// Settings are the request settings the run was made with: a resume
	// uses them where its Config leaves them unset. Never an API key.
	Settings *RunSettings `json:"settings,omitempty"`
}

// RunSettings are the settings a durable run's requests were made with,
// and where they went: saved with the run (never an API key), so that a
// resume uses them where its Config leaves them unset, and a program
// that rebuilds the provider (acts resume) calls the same endpoint.
type RunSettings struct {
	Endpoint    *provider.Endpoint `json:"endpoint,omitempty"`
	Model       string             `json:"model,omitempty"`
	Temperature *float64           `json:"temperature,omitempty"`
	MaxTokens   int                `json:"maxTokens,omitempty"`
	Thinking    int                `json:"thinking,omitempty"`
	Rendering   Rendering          `json:"rendering,omitempty"`
	// The run's limits and what keeps its requests cached: a resume
	// without them would end a long run at DefaultMaxSteps, drop its
	// token budget, or render and route its context differently from
	// the requests before, which the prompt cache then misses.
	MaxSteps        int                     `json:"maxSteps,omitempty"`
	MaxCallsPerStep int                     `json:"maxCallsPerStep,omitempty"`
	MaxRepairs      int                     `json:"maxRepairs,omitempty"`
	MaxDepth        int                     `json:"maxDepth,omitempty"`
	TokenBudget     int                     `json:"tokenBudget,omitempty"`
	CompactAt       int                     `json:"compactAt,omitempty"`
	CacheKey        string                  `json:"cacheKey,omitempty"`
	CacheRetention  provider.CacheRetention `json:"cacheRetention,omitempty"`
	Veto            float64                 `json:"veto,omitempty"`
	// Activities are the activities the run's tools had when it was made
	// (those its tool messages offer, and its plan's), sorted. Resume and
	// Continue fail with ErrMissingActivity when their registry lacks one.
	Activities []string `json:"activities,omitempty"`
	// MCP are the MCP servers of Config.MCP, as given (their Env
	// entries included): a program that resumes the run connects them
	// again and registers their tools (acts resume and acts continue
	// do), since the run's context offers those tools and its calls need
	// their activities. Resume itself does not read them.
	MCP []MCPServer `json:"mcp,omitempty"`
}

// settingsOf returns the settings of cfg to save with a run.
func settingsOf(cfg *Config) *RunSettings {
	s := &RunSettings{Model: cfg.Model, Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, Thinking: cfg.Thinking, Rendering: cfg.Rendering,
		MaxSteps: cfg.MaxSteps, MaxCallsPerStep: cfg.MaxCallsPerStep, MaxRepairs: cfg.MaxRepairs, MaxDepth: cfg.MaxDepth,
		TokenBudget: cfg.TokenBudget, CompactAt: cfg.CompactAt, CacheKey: cfg.CacheKey, CacheRetention: cfg.CacheRetention, Veto: cfg.Veto, MCP: cfg.MCP}
	if d, ok := cfg.Provider.(provider.Describer); ok {
		if e := d.Endpoint(); e.Provider != "" {
			s.Endpoint = &e
		}
	}
	return s
}

// activitiesOf returns the activities the tools of a new run resolve to
// in reg, sorted: the tools msgs offer and those plan calls.
func activitiesOf(reg *Registry, msgs []message.Message, plan []json.RawMessage) []string {
	var names []string
	add := func(tool string, def json.RawMessage) {
		if def == nil {
			def, _ = reg.LookupTool(tool)
		}
		if a, name, err := reg.resolveActivity(tool, def); err == nil && a != nil && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for i := range msgs {
		if msgs[i].Type != message.TypeTool {
			continue
		}
		tools, _ := msgs[i].OfferedTools()
		for _, t := range tools {
			add(t.Name, t.Def)
		}
	}
	for _, c := range plan {
		if m, err := message.ParseCallMeta(c); err == nil && m.Tool != "" {
			add(m.Tool, nil)
		}
	}
	slices.Sort(names)
	return names
}

// missingActivities returns an error naming the activities the run was
// made with that reg lacks.
func (s *RunSettings) missingActivities(reg *Registry) error {
	if s == nil {
		return nil
	}
	have := reg.ActivityNames()
	var missing []string
	for _, n := range s.Activities {
		if !slices.Contains(have, n) {
			missing = append(missing, n)
		}
	}
	if missing == nil {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrMissingActivity, strings.Join(missing, ", "))
}

// contexts are the Context of each of the run's turns, in order.
func (s *runSpec) contexts() []int {
	return append(slices.Clip(s.Turns), s.Context)
}

// contextAt is the Context of the turn a journal of n messages, whose
// first turns ended, is in: the spec's last turn's for the run itself,
// an earlier one's for a fork at a message of that turn. A fork cut
// inside a turn's context has only n messages of it. A spec from before
// Turns were kept knows only its last turn's.
func (s *runSpec) contextAt(ended, n int) int {
	cs := s.contexts()
	return min(cs[min(ended, len(cs)-1)], n)
}

// SavedSettings returns the settings run was made with, a loop's or a
// plan's, or nil for a run from before they were saved.
func SavedSettings(run store.Run) (*RunSettings, error) {
	spec, err := specOf(run)
	return spec.Settings, err
}

// specOf reads what run saved for resuming it.
func specOf(run store.Run) (runSpec, error) {
	var spec runSpec
	if len(run.Spec) > 0 {
		if err := json.Unmarshal(run.Spec, &spec); err != nil {
			return spec, errorf("agent: run %s: spec: %w", run.ID, err)
		}
	}
	return spec, nil
}

// apply sets the settings cfg leaves unset.
func (s *RunSettings) apply(cfg *Config) {
	if s == nil {
		return
	}
	if cfg.Model == "" {
		cfg.Model = s.Model
	}
	if cfg.Temperature == nil {
		cfg.Temperature = s.Temperature
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = s.MaxTokens
	}
	if cfg.Thinking == 0 {
		cfg.Thinking = s.Thinking
	}
	if cfg.Rendering == "" {
		cfg.Rendering = s.Rendering
	}
	for _, f := range []struct{ cfg, saved *int }{
		{&cfg.MaxSteps, &s.MaxSteps}, {&cfg.MaxCallsPerStep, &s.MaxCallsPerStep}, {&cfg.MaxRepairs, &s.MaxRepairs},
		{&cfg.MaxDepth, &s.MaxDepth}, {&cfg.TokenBudget, &s.TokenBudget}, {&cfg.CompactAt, &s.CompactAt},
	} {
		if *f.cfg == 0 {
			*f.cfg = *f.saved
		}
	}
	if cfg.CacheKey == "" {
		cfg.CacheKey = s.CacheKey
	}
	if cfg.CacheRetention == "" {
		cfg.CacheRetention = s.CacheRetention
	}
	if cfg.Veto == 0 {
		cfg.Veto = s.Veto
	}
}

// runEnd is the data of a journal's end entry: the run's result.
type runEnd struct {
	Solution json.RawMessage   `json:"solution,omitempty"`
	Usage    provider.Usage    `json:"usage"`
	Steps    int               `json:"steps,omitempty"`
	Advice   []json.RawMessage `json:"advice,omitempty"`
}

// runStatus is the data of a journal's status entry.
type runStatus struct {
	Status store.Status `json:"status"`
	Error  string       `json:"error,omitempty"`
}

// journal records a run in a store.Store as it goes. It sits between a
// scheduler and its consumer: every event is made durable before the
// consumer sees it, and since the scheduler starts a call only after the
// event saying so was yielded, a call's start and everything it read are
// durable before it runs. Messages wait in buf and go with the next call
// event, so a call's messages and its settling are one Append.
type journal struct {
	st     store.Store
	run    store.Run
	lease  *lease
	buf    []store.Entry
	result func() *RunResult // the scheduler's result so far, for errors
	// failing are the calls that failed and whose error message has not
	// come yet, by their JSON, in the order they failed: the scheduler
	// appends error messages in that order, so each names its call. cut
	// marks those the run's cancellation cut short.
	failing map[string][]failedCall
	// cutShort is set once the run's cancellation cut a call short.
	cutShort bool
	// batch leaves call entries in buf for the scheduler to flush before
	// the calls it starts run (plans); otherwise each call event flushes.
	batch bool
	// lastCall is the length of buf after its last entry that is not a
	// message a call wrote: messages after it belong to the completion
	// being recorded.
	lastCall int
	// closed is set once close saved, or tried to save, how the run ended.
	closed bool
	// reopen is set while a resumed run is not saved running yet: its
	// first write does (see flush).
	reopen bool
}

// failedCall is a call that failed, waiting for its error message.
type failedCall struct {
	id  string
	cut bool
}

// resumed is what a journal says about the calls of an earlier attempt.
type resumed struct {
	settled map[string]*message.Message // call id → its error message; nil when it succeeded
	started map[string]json.RawMessage  // calls started and never settled
	queued  map[string]json.RawMessage  // calls the model wrote that never started or settled
	advice  map[string]json.RawMessage  // the advisors' opinions, by step
	ended   bool                        // the run reached its end
	msgs    []message.Message           // the log
	calls   map[string]json.RawMessage  // every call recorded since the last end, by id
	// at is, for each call started and never settled, how many messages
	// preceded its (first) start: the log its references were resolved in.
	at map[string]int
	// failed are the calls that settled with an error, in that order, and
	// logged those whose error message is in the log.
	failed []string
	logged map[string]bool
	// stepAt is how many messages preceded a step's first call entry;
	// callStep is the last step with a call, and step the last step the
	// journal knows of (a call, or a request's usage).
	stepAt   map[int]int
	callStep int
	step     int
	// seen is how many messages the request of the last step with calls
	// was sent with, when the resumed run's first request goes on from
	// it (0 otherwise; see resumeLoop).
	seen int
	// exec runs the calls the resume finishes (nil when there are none).
	exec *executor
	// usage sums the journal's usage entries: every request so far;
	// stepTokens sums them by step (a step's request and its calls').
	usage      provider.Usage
	stepTokens map[int]int
	// end is the result of a run that reached its end.
	end *runEnd
	// lease is the run's, held by the resume.
	lease *lease
	// journaled is set once the journal took the run and its lease over.
	journaled bool
	// run is the run as the resume loaded it, under the lease: no one
	// else writes it until the journal takes it over.
	run store.Run
	// continued is set when the run goes on with a new turn (Continue):
	// the messages of msgs from from on are the turn's, for the journal,
	// and given holds where each message Continue was given starts
	// among them (a preset expands to several), for its errors.
	continued bool
	from      int
	given     []int
	// turnStep and turnTokens are the steps and tokens of the run before
	// its current turn, at its last end: a turn's limits are its own.
	turnStep, turnTokens int
	// turns counts the journal's ends: the turns that ended.
	turns int
	// written is set when the journal began writing the run: an error
	// before is a refusal (ErrRefused).
	written bool
}

// openJournal creates the run, held by this process, with the messages
// given as the start of its journal (a new run), or continues the
// journal of a run whose lease a resume holds. The lease is renewed
// until the run ends; cancel stops the run if it is lost.
func openJournal(ctx context.Context, cfg Config, kind string, spec runSpec, msgs []message.Message, cancel context.CancelCauseFunc) (*journal, error) {
	now := platform.Now(ctx).UTC()
	j := &journal{st: cfg.Store}
	if rs := cfg.resume; rs != nil {
		j.lease = rs.lease
		run := rs.run
		run.Kind, run.Status, run.Error, run.Updated, run.Lease = kind, store.Running, "", now, j.lease.terms(ctx)
		if kind == kindLoop {
			// The turn's context: the whole log for a new turn, as a new
			// run's would be (see Config.contextLen), or what the resume
			// goes on with; the turns the journal ended keep theirs, and
			// a fork's spec loses the turns of its parent after them. The
			// rest of the spec stays.
			saved, err := specOf(run)
			if err != nil {
				return nil, err
			}
			cs := saved.contexts()
			saved.Turns, saved.Context = cs[:min(rs.turns, len(cs))], spec.Context
			if run.Spec, err = json.Marshal(saved); err != nil {
				return nil, errorf("agent: run spec: %w", err)
			}
		}
		rs.written = true // from here on, an error may leave the run changed
		if rs.continued {
			// The turn's messages are durable before its first request,
			// with the Save that makes the run running again: the journal
			// holds all of them or none, and the run runs only with them.
			for i := range msgs[rs.from:] {
				if err := j.message(ctx, &msgs[rs.from+i], ""); err != nil {
					return nil, err
				}
			}
		}
		// The Save that makes the run running again goes with the
		// journal's first write (see flush), which comes before anything
		// the run does outside: a call's start, a request to the model.
		j.run, j.reopen = run, true
		// The calls that failed before the resume and whose error message
		// the log lacks: the resume appends those messages first.
		j.failing = map[string][]failedCall{}
		for _, id := range rs.unlogged() {
			m := rs.settled[id]
			j.failing[string(m.Failed)] = append(j.failing[string(m.Failed)], failedCall{id: id})
		}
		rs.journaled = true // the resume renews its lease already
		return j, nil
	}
	id := cfg.RunID
	if id == "" {
		id = platform.NewID(ctx)
	}
	j.lease = newLease(&cfg, id)
	spec.Settings = settingsOf(&cfg)
	spec.Settings.Activities = activitiesOf(cfg.registry(), msgs, spec.Plan)
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, errorf("agent: run spec: %w", err)
	}
	model := cfg.Model
	if e := spec.Settings.Endpoint; e != nil {
		// A Config that names no model asks the adapter's default.
		if model = cmp.Or(model, e.Model); model != "" {
			model = e.Provider + ":" + model
		}
	}
	sent := j.lease.since() // the lease is held for a TTL from its terms
	j.run = store.Run{ID: id, Kind: kind, Idea: cfg.Origin, Model: model, Status: store.Running, Spec: b,
		Created: now, Updated: now, Lease: j.lease.terms(ctx)}
	for i := range msgs {
		if err := j.message(ctx, &msgs[i], ""); err != nil {
			return nil, err
		}
	}
	// The run and its context are created together: a run exists with
	// all of its context or not at all.
	if err := j.lease.take(ctx, sent, func(ctx context.Context) error { return cfg.Store.Create(ctx, j.run, j.buf...) }); err != nil {
		if errors.Is(err, store.ErrExists) {
			return nil, errorf("agent: run %s already exists: resume it, or give another id: %w", id, err)
		}
		return nil, errorf("agent: create run %s: %w", id, err)
	}
	j.buf = j.buf[:0]
	j.lease.keep(ctx, cancel)
	return j, nil
}

// message adds m to the journal; call names the call it is the error
// message of, if it is one.
func (j *journal) message(ctx context.Context, m *message.Message, call string) error {
	e, err := messageEntry(ctx, m, call)
	if err != nil {
		return err
	}
	j.buf = append(j.buf, e)
	return nil
}

// messageEntry is the journal entry of m. Resume restores the error
// messages of failed calls the journal lacks, and only those: call names
// the call m is the error message of, if it is one.
func messageEntry(ctx context.Context, m *message.Message, call string) (store.Entry, error) {
	// MarshalJSON itself: json.Marshal would escape <, > and & in the raw
	// parts (tool definitions, plans), and the resumed run would render
	// them unlike the run that sent them, missing the prompt cache.
	b, err := m.MarshalJSON()
	if err != nil {
		return store.Entry{}, errorf("agent: journal message: %w", err)
	}
	return store.Entry{Type: store.EntryMessage, Call: call, Data: b, Time: platform.Now(ctx).UTC()}, nil
}

// flush writes the journal's entries; a resumed run's first flush
// saves the run running again with them, in one write, so a crash finds
// the run as it was or reopened with them.
func (j *journal) flush(ctx context.Context) error {
	if len(j.buf) == 0 && !j.reopen {
		return nil
	}
	// The entries must land even when the run is being cancelled: they
	// record what already happened.
	var err error
	if j.reopen {
		j.reopen = false
		j.run.Updated = platform.Now(ctx).UTC()
		err = j.lease.save(ctx, &j.run, j.buf)
	} else {
		err = j.lease.append(ctx, j.buf)
	}
	j.buf, j.lastCall = j.buf[:0], 0
	if err != nil {
		return errorf("agent: journal of run %s: %w", j.run.ID, err)
	}
	return nil
}

// record makes an event durable.
func (j *journal) record(ctx context.Context, ev RunEvent) error {
	now := platform.Now(ctx).UTC()
	switch ev.Kind {
	case EventMessage:
		m := ev.Message
		var call failedCall
		if m.Type == message.TypeError && m.Failed != nil {
			if q := j.failing[string(m.Failed)]; len(q) > 0 {
				call, j.failing[string(m.Failed)] = q[0], q[1:]
			}
		}
		switch {
		case call.cut:
			// The call did not settle: Resume runs it again or reports it.
			return nil
		case j.cutShort && j.run.Kind == kindLoop && (m.Type == message.TypePlan || call.id != ""):
			// A step whose calls the cancellation cut short did not end:
			// its plan and its calls' errors stay out, and Resume ends the
			// step from its calls' entries, as after a crash.
			return nil
		}
		if err := j.message(ctx, m, call.id); err != nil {
			return err
		}
		if !ev.byCall {
			j.lastCall = len(j.buf)
		}
		return nil
	case EventCallQueued:
		// A copy: the event's call is its consumer's, and the entry may
		// wait for the round's Append while the consumer changes it.
		j.buf = append(j.buf, store.Entry{Type: store.EntryQueued, Call: ev.Call.ID, Data: bytes.Clone(ev.Call.Raw), Time: now})
	case EventAdvice:
		raws := make([]json.RawMessage, len(ev.Opinions))
		for i, op := range ev.Opinions {
			raws[i] = op.Raw
		}
		b, err := json.Marshal(raws)
		if err != nil {
			return errorf("agent: journal advice: %w", err)
		}
		j.buf = append(j.buf, store.Entry{Type: store.EntryAdvice, Call: strconv.Itoa(ev.Step), Data: b, Time: now})
	case EventCallStarted:
		j.buf = append(j.buf, store.Entry{Type: store.EntryStarted, Call: ev.Call.ID, Data: bytes.Clone(ev.Call.Raw), Time: now})
	case EventCallFinished:
		j.buf = append(j.buf, store.Entry{Type: store.EntrySettled, Call: ev.Call.ID, Time: now})
	case EventCallFailed:
		if j.failing == nil {
			j.failing = map[string][]failedCall{}
		}
		if ctx.Err() != nil && (errors.Is(ev.Err, context.Canceled) || errors.Is(ev.Err, context.DeadlineExceeded)) {
			// The run's own cancellation cut the call short: it did not
			// settle, and Resume runs it again (if idempotent) as it would
			// after a crash. What it wrote on its way out (an error
			// branch) and its error message stay out of the journal.
			j.buf = j.buf[:j.lastCall]
			j.failing[string(ev.Call.Raw)] = append(j.failing[string(ev.Call.Raw)], failedCall{id: ev.Call.ID, cut: true})
			j.cutShort = true
			return nil
		}
		b, err := ErrorMessage(ev.Call.Raw, ev.Err).MarshalJSON()
		if err != nil {
			return errorf("agent: journal error: %w", err)
		}
		j.failing[string(ev.Call.Raw)] = append(j.failing[string(ev.Call.Raw)], failedCall{id: ev.Call.ID})
		j.buf = append(j.buf, store.Entry{Type: store.EntrySettled, Call: ev.Call.ID, Data: b, Time: now})
	case EventUsage:
		// A request's usage is durable as soon as it is known, so a run's
		// total survives failures and crashes.
		b, err := json.Marshal(struct {
			*provider.Usage
			Lost bool `json:"lost,omitempty"`
		}{ev.Usage, ev.UsageLost})
		if err != nil {
			return errorf("agent: journal usage: %w", err)
		}
		if ev.Call != nil {
			// A call's own request: its usage goes with the call's
			// settling, which follows at once, and stays if the call is
			// cut short.
			j.buf = append(j.buf, store.Entry{Type: store.EntryUsage, Call: ev.Call.ID, Data: b, Time: now})
			j.lastCall = len(j.buf)
			if j.batch {
				return nil
			}
			return j.flush(ctx)
		}
		j.buf = append(j.buf, store.Entry{Type: store.EntryUsage, Call: strconv.Itoa(ev.Step), Data: b, Time: now})
		if ev.stepEnds {
			// The step's end, written next, takes it.
			j.lastCall = len(j.buf)
			return nil
		}
		return j.flush(ctx)
	case EventStep:
		return j.flush(ctx)
	case EventDone:
		b, err := json.Marshal(endOf(ev.Result))
		if err != nil {
			return errorf("agent: journal end: %w", err)
		}
		// The end goes with the run's last Save (see close).
		j.buf = append(j.buf, store.Entry{Type: store.EntryEnd, Data: b, Time: now})
		return j.close(ctx, nil, ev.Result)
	default:
		return nil
	}
	j.lastCall = len(j.buf)
	if j.batch {
		return nil
	}
	return j.flush(ctx)
}

// endOf is what a journal keeps of a run's result.
func endOf(res *RunResult) runEnd {
	e := runEnd{Usage: res.Usage, Steps: res.Steps}
	if res.Solution != nil {
		e.Solution = res.Solution.Raw
	}
	for _, op := range res.Advice {
		e.Advice = append(e.Advice, op.Raw)
	}
	return e
}

// close saves how the run ended, and gives its lease up, in one write
// with the journal's last entries (the end, or the status of a run that
// stopped short of it, which says why): a run is saved done only with
// its end in the journal. When that write fails, the run is saved
// without them: as it stopped, or failed with the write's error when it
// had reached its end.
func (j *journal) close(ctx context.Context, runErr error, res *RunResult) error {
	j.closed = true
	j.lease.release()
	j.status(runErr)
	now := platform.Now(ctx).UTC()
	if runErr != nil {
		b, _ := json.Marshal(runStatus{Status: j.run.Status, Error: j.run.Error})
		j.buf = append(j.buf, store.Entry{Type: store.EntryStatus, Data: b, Time: now})
	}
	if res != nil {
		j.run.Usage = res.Usage
	}
	j.run.Updated, j.run.Lease = now, store.Lease{}
	j.reopen = false // this Save reopens it, if none did yet
	err := j.save(ctx, j.buf)
	j.buf, j.lastCall = j.buf[:0], 0
	if err == nil {
		return nil
	}
	jerr := errorf("agent: journal of run %s: %w", j.run.ID, err)
	if errors.Is(err, store.ErrLeased) || errors.Is(err, errNoAnswer) {
		// Another holds the run, or the store is not answering: a save
		// would not land either.
		return jerr
	}
	if runErr == nil {
		j.status(jerr)
	}
	if err := j.save(ctx, nil); err != nil {
		return errors.Join(jerr, errorf("agent: save run %s: %w", j.run.ID, err))
	}
	return jerr
}

// status sets the run's status and error for a run that stopped with
// runErr (nil: it reached its end).
func (j *journal) status(runErr error) {
	switch {
	case runErr == nil:
		j.run.Status, j.run.Error = store.Done, ""
	case errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded):
		j.run.Status, j.run.Error = store.Interrupted, runErr.Error()
	default:
		j.run.Status, j.run.Error = store.Failed, runErr.Error()
	}
}

// save saves the run with entries appended to its journal, together.
func (j *journal) save(ctx context.Context, entries []store.Entry) error {
	return j.lease.write(ctx, func(ctx context.Context) error { return j.st.Save(ctx, j.lease.owner, j.run, entries...) })
}

// wrap returns the yield a scheduler uses when its run is journaled.
// Stopped reports whether the consumer stopped the stream early, so the
// run can be saved as interrupted.
func (j *journal) wrap(ctx context.Context, yield func(RunEvent, error) bool) (wrapped func(RunEvent, error) bool, finish func()) {
	stopped, closed := false, false
	wrapped = func(ev RunEvent, err error) bool {
		if stopped {
			return false
		}
		if err != nil {
			stopped, closed = true, true
			err = withLeaseCause(ctx, err)
			res := j.result()
			var le *LimitError
			if errors.As(err, &le) && le.Result != nil {
				res = le.Result
			}
			// What the journal holds yet goes with the run's last Save.
			if cerr := j.close(ctx, err, res); cerr != nil {
				err = errors.Join(err, cerr)
			}
			yield(ev, err)
			return false
		}
		if jerr := j.record(ctx, ev); jerr != nil {
			stopped, closed = true, true
			// The run stops here: it saves how it ended and gives its
			// lease up, unless recording the end already did (the error
			// is then the save's).
			res := j.result()
			if !j.closed {
				if cerr := j.close(ctx, jerr, res); cerr != nil {
					jerr = errors.Join(jerr, cerr)
				}
			}
			yield(RunEvent{}, &LimitError{Err: jerr, Result: res})
			return false
		}
		if ev.Kind == EventDone {
			closed = true
		}
		if !yield(ev, nil) {
			stopped = true
			return false
		}
		return true
	}
	finish = func() {
		if closed {
			return
		}
		// The consumer stopped early: keep what happened, resumable.
		_ = j.close(ctx, context.Canceled, j.result())
	}
	return wrapped, finish
}

// readJournal loads the journal of run.
func readJournal(ctx context.Context, st store.Store, run store.Run) (*resumed, error) {
	id := run.ID
	var usage store.UsageTotal
	var last store.Entry // the last end
	r := &resumed{settled: map[string]*message.Message{}, started: map[string]json.RawMessage{}, queued: map[string]json.RawMessage{},
		advice: map[string]json.RawMessage{}, calls: map[string]json.RawMessage{}, at: map[string]int{}, logged: map[string]bool{}, stepAt: map[int]int{}, stepTokens: map[int]int{}}
	note := func(id string, raw json.RawMessage) {
		if _, ok := r.calls[id]; !ok {
			r.calls[id] = raw
		}
		if n, ok := stepOf(id); ok {
			if _, seen := r.stepAt[n]; !seen {
				r.stepAt[n] = len(r.msgs)
			}
			r.callStep = max(r.callStep, n)
			r.step = max(r.step, n)
		}
	}
	for e, err := range st.Entries(ctx, id, 0) {
		if err != nil {
			return nil, errorf("agent: read run %s: %w", id, err)
		}
		if r.ended && e.Type != store.EntryEnd { // a turn after it (Continue)
			r.ended = false
		}
		switch e.Type {
		case store.EntryMessage:
			// message.Parse: json.Unmarshal would check the bytes before
			// the message's own decoder checks them again (a resume of
			// 500 steps takes 0.91× the time; docs/PERFORMANCE.md).
			m, err := message.Parse(e.Data)
			if err != nil {
				return nil, errorf("agent: run %s: entry %d: %w", id, e.Seq, err)
			}
			r.msgs = append(r.msgs, m)
			if e.Call != "" {
				r.logged[e.Call] = true
			}
		case store.EntryQueued:
			r.queued[e.Call] = e.Data
			note(e.Call, e.Data)
		case store.EntryAdvice:
			r.advice[e.Call] = e.Data
		case store.EntryStarted:
			delete(r.queued, e.Call)
			r.started[e.Call] = e.Data
			if _, again := r.at[e.Call]; !again { // a resume ran it again
				r.at[e.Call] = len(r.msgs)
			}
			note(e.Call, e.Data)
		case store.EntrySettled:
			delete(r.queued, e.Call)
			delete(r.started, e.Call)
			r.settled[e.Call] = nil
			var failed json.RawMessage
			if len(e.Data) > 0 {
				var m message.Message
				if err := json.Unmarshal(e.Data, &m); err != nil {
					return nil, errorf("agent: run %s: entry %d: %w", id, e.Seq, err)
				}
				r.settled[e.Call] = &m
				r.failed = append(r.failed, e.Call)
				failed = m.Failed
			}
			note(e.Call, failed)
		case store.EntryUsage:
			if err := usage.Add(e); err != nil {
				return nil, errorf("agent: run %s: %w", id, err)
			}
			// A call's request ("2.0"), or a step's ("2").
			n, ok := stepOf(e.Call)
			if m, err := strconv.Atoi(e.Call); err == nil {
				r.step = max(r.step, m)
				n, ok = m, true
			}
			if ok {
				var u provider.Usage
				_ = json.Unmarshal(e.Data, &u) // usage.Add took it
				r.stepTokens[n] += u.Total()
			}
		case store.EntryEnd:
			// Only the last end is decoded, after the loop: each holds the
			// run's steps and usage so far, and a conversation has an end
			// a turn.
			r.ended, last = true, e
			r.turns++
			// The run ended: a call it left unsettled never runs, and
			// none recorded before is finished by a resume (see finish).
			clear(r.started)
			clear(r.queued)
			clear(r.calls)
		}
	}
	if r.turns > 0 {
		end := &runEnd{}
		if len(last.Data) > 0 {
			if err := json.Unmarshal(last.Data, end); err != nil {
				return nil, errorf("agent: run %s: entry %d: %w", id, last.Seq, err)
			}
		}
		if r.ended {
			r.end = end
		}
		// A turn after it starts counting its steps and tokens here.
		r.step = max(r.step, end.Steps)
		r.turnStep, r.turnTokens = end.Steps, end.Usage.Total()
	}
	r.usage = usage.Of(run)
	return r, nil
}

// Resume continues a run of cfg.Store from its journal after a crash, a
// Ctrl-C or a fork. Calls that settled are not run again: their messages
// are in the log. A call that started and never settled runs again when
// its activity is Idempotent or it is latent (it asks the model), and
// otherwise fails with ErrInterrupted; so does a delegate's. A
// plan run then runs its remaining calls; a loop run finishes the step it
// was in and goes on with the loop. A run that already ended returns its
// result as it is. cfg.Store must also be a store.Catalog, and a loop
// run that has not ended needs cfg.Provider (ErrNoProvider otherwise).
func Resume(ctx context.Context, cfg Config, id string) (*RunResult, error) {
	return Collect(ResumeEvents(ctx, cfg, id))
}

// ResumeEvents is Resume as a stream of events.
func ResumeEvents(ctx context.Context, cfg Config, id string) iter.Seq2[RunEvent, error] {
	return reopen(ctx, cfg, id, false, nil)
}

// Continue goes on with a loop run of cfg.Store that is done: the next
// turn of a conversation kept in one run. It appends to the run's
// journal its answer, an assistant text message holding the output's
// JSON as the model wrote it (none when the run has no output), then
// msgs, and runs the loop on from there with the run's schema and saved
// settings (see [Resume]), journaling only what the turn adds. The
// turn's requests are those of a new run over the run's log, its answer
// and msgs (docs/loop.md, Conversations), byte for byte, so its first
// request extends the turn before's last and the prompt cache reads it.
//
// The run keeps its id; it is running again until the turn ends, done
// or failed, and a turn cut short is resumed as any run is. A turn has
// the limits of a run of its own (MaxSteps, TokenBudget); the result's
// Steps and Usage count every turn of the run, and its Log is the whole
// conversation. Continue holds the run's lease as Resume does: a run
// another process advances fails with a *store.LeaseError
// (store.ErrLeased), one that has not finished (failed, interrupted, or
// left running by a process that died) with ErrUnfinished (Resume it
// first), a plan run with ErrNotLoop, an unknown one with
// store.ErrNotFound; the run is then as it was. So it is when the
// turn's first request cannot be prepared with msgs: it is prepared
// before msgs are journaled, through the handlers the loop uses, and
// its error is returned, saying which of msgs it is about, or which
// tool for a tool definition that does not compile (a type no
// handler renders is a *MessageError wrapping ErrUnknownType, a tool
// the registry lacks one wrapping ErrUnknownTool; the MessageError's
// Index is the message's in the log). Journaled, such a message would
// fail the turn and every resume of the run after it. msgs are copied:
// they stay the caller's.
func Continue(ctx context.Context, cfg Config, id string, msgs ...message.Message) (*RunResult, error) {
	return Collect(ContinueEvents(ctx, cfg, id, msgs...))
}

// ContinueEvents is Continue as a stream of events.
func ContinueEvents(ctx context.Context, cfg Config, id string, msgs ...message.Message) iter.Seq2[RunEvent, error] {
	return reopen(ctx, cfg, id, true, msgs)
}

// reopen resumes run id, or, with next, continues it with msgs.
func reopen(ctx context.Context, cfg Config, id string, next bool, msgs []message.Message) iter.Seq2[RunEvent, error] {
	op, name := "resume", "Resume"
	if next {
		op, name = "continue", "Continue"
	}
	return func(yield func(RunEvent, error) bool) {
		cat, ok := cfg.Store.(store.Catalog)
		if cfg.Store == nil || !ok {
			yield(RunEvent{}, refusal{fmt.Errorf("%w: %s needs a store.Store that is also a store.Catalog", ErrNoStore, name)})
			return
		}
		ctx = runContext(ctx, cfg)
		// The lease first: what the journal says is only final for its
		// holder.
		l, err := acquire(ctx, &cfg, id)
		if err != nil {
			err = errorf("agent: %s %s: %w", op, id, err)
			if errors.Is(err, store.ErrLeased) || errors.Is(err, store.ErrNotFound) {
				// Any other failure may have taken the run after all.
				err = refusal{err}
			}
			yield(RunEvent{}, err)
			return
		}
		// Renewed from now on, for the whole resumed run (the journal
		// takes this lease over). A resume that stops before the journal
		// took the run gives it back at once rather than holding it until
		// its lease expires.
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		l.keep(ctx, cancel)
		run, rs, spec, err := loadRun(ctx, cat, cfg.Store, id, op)
		if err == nil && (next || !rs.ended) {
			if err = spec.Settings.missingActivities(cfg.registry()); err != nil {
				err = errorf("agent: %s %s: %w", op, id, err)
			}
		}
		if err == nil && next {
			err = rs.next(run, msgs, cfg.Provider, cfg.registry())
		}
		defer func() {
			if rs == nil || !rs.journaled {
				l.giveUp(ctx, run)
			}
			l.release()
		}()
		if err != nil {
			yield(RunEvent{}, refusal{withLeaseCause(ctx, err)})
			return
		}
		rs.lease, rs.run = l, run
		cfg.RunID, cfg.resume = id, rs
		if rs.ended { // nothing left to do: its result is in the journal
			res, err := rs.result(id)
			if err == nil && run.Status != store.Done {
				run.Status, run.Error, run.Updated = store.Done, "", platform.Now(ctx).UTC()
			}
			l.giveUp(ctx, run)
			if err != nil {
				yield(RunEvent{}, err)
				return
			}
			yield(RunEvent{Kind: EventDone, Usage: &res.Usage, Result: res}, nil)
			return
		}
		spec.Settings.apply(&cfg)
		var events iter.Seq2[RunEvent, error]
		switch run.Kind {
		case kindPlan:
			events = PlanEvents(ctx, cfg, spec.Plan, rs.msgs)
			if spec.Instanced {
				events = PlanInstancesEvents(ctx, cfg, spec.Plan, rs.msgs)
			}
		case kindLoop:
			if cfg.Provider == nil { // a loop goes on by asking the model
				yield(RunEvent{}, refusal{errorf("agent: resume %s: %w", id, ErrNoProvider)})
				return
			}
			cfg.contextLen = spec.contextAt(rs.turns, len(rs.msgs))
			events = resumeLoop(ctx, cfg, spec.Schema)
		default:
			yield(RunEvent{}, refusal{errorf("agent: resume %s: unknown kind of run %q", id, run.Kind)})
			return
		}
		for ev, err := range events {
			if err != nil && !rs.journaled { // the journal adds it itself
				err = withLeaseCause(ctx, err)
				if !rs.written {
					err = refusal{err}
				}
			}
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// withLeaseCause adds to err why ctx was cancelled when the run's lease was
// lost: the error a cancelled call returns does not say it.
func withLeaseCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errLeaseLost) && !errors.Is(err, errLeaseLost) && !errors.Is(err, store.ErrLeased) {
		return errors.Join(err, cause)
	}
	return err
}

// loadRun reads what a resume (or op) needs of run id: its metadata,
// journal and spec.
func loadRun(ctx context.Context, cat store.Catalog, st store.Store, id, op string) (store.Run, *resumed, runSpec, error) {
	run, err := cat.Load(ctx, id)
	if err != nil {
		return run, nil, runSpec{}, errorf("agent: %s %s: %w", op, id, err)
	}
	spec, err := specOf(run)
	if err != nil {
		return run, nil, spec, err
	}
	rs, err := readJournal(ctx, st, run)
	if err != nil {
		return run, nil, spec, err
	}
	return run, rs, spec, nil
}

// next makes rs, the journal of run, the start of the run's next turn:
// its log, its answer and msgs, their presets expanded. The run must be
// a loop's that ended. Whether the handlers take msgs is for the turn's
// first request to say, before the journal takes them (see loopEvents).
func (rs *resumed) next(run store.Run, msgs []message.Message, p provider.Provider, reg *Registry) error {
	switch {
	case run.Kind != kindLoop:
		return errorf("agent: continue %s: %w: it is a %s run", run.ID, ErrNotLoop, run.Kind)
	case !rs.ended:
		return errorf("agent: continue %s: %w: it is %s; resume it first", run.ID, ErrUnfinished, run.Status)
	case p == nil:
		return errorf("agent: continue %s: %w", run.ID, ErrNoProvider)
	}
	rs.continued, rs.from = true, len(rs.msgs)
	if len(rs.end.Solution) > 0 {
		sol, err := splitSolution(rs.end.Solution)
		if err != nil {
			return errorf("agent: continue %s: solution: %w", run.ID, err)
		}
		if len(sol.Output) > 0 {
			rs.msgs = append(rs.msgs, message.Assistant(string(sol.Output)))
		}
	}
	for i := range msgs {
		// One at a time, so that an error names the message given, its
		// index the message's in the log. A preset expands on its own:
		// the log's were expanded when it was journaled, and going over
		// it again for each message would grow with the conversation.
		rs.given = append(rs.given, len(rs.msgs))
		expanded, err := ExpandPresets(reg, nil, msgs[i:i+1])
		if err != nil {
			if me, ok := errors.AsType[*MessageError](err); ok {
				me.Index += len(rs.msgs)
			}
			return rs.refused(run.ID, err)
		}
		rs.msgs = append(rs.msgs, expanded...)
	}
	rs.ended, rs.end = false, nil
	return nil
}

// refused is err, which stops the turn Continue starts before its
// messages are journaled, saying which of the messages given it is
// about when it is about one (the log numbers them on from the run's).
func (rs *resumed) refused(id string, err error) error {
	if me, ok := errors.AsType[*MessageError](err); ok && len(rs.given) > 0 && me.Index >= rs.given[0] {
		k, _ := slices.BinarySearch(rs.given, me.Index+1) // the given messages that start at or before it
		return errorf("agent: continue %s: the turn's message %d: %w", id, k, err)
	}
	return errorf("agent: continue %s: %w", id, err)
}

// result is the result of a run whose journal ended.
func (rs *resumed) result(id string) (*RunResult, error) {
	log, err := message.NewLog(rs.msgs...)
	if err != nil {
		return nil, errorf("agent: resume %s: %w", id, err)
	}
	res := &RunResult{Log: log, Usage: rs.usage, RunID: id, Steps: rs.end.Steps}
	if len(rs.end.Solution) > 0 {
		if res.Solution, err = splitSolution(rs.end.Solution); err != nil {
			return nil, errorf("agent: resume %s: solution: %w", id, err)
		}
	}
	if len(rs.end.Advice) > 0 {
		raw, _ := json.Marshal(rs.end.Advice)
		if res.Advice, err = opinionsOf(raw); err != nil {
			return nil, errorf("agent: resume %s: %w", id, err)
		}
	}
	return res, nil
}

// interrupted returns ErrInterrupted for a call an earlier attempt of the
// run started and never settled, unless its activity is idempotent or it
// has none: a latent call is a request to the model, which changes
// nothing outside the run and is asked again as a cut step is. A
// delegate's sub-run may call activities, so it is not run again.
func (x *executor) interrupted(rs *resumed, id string, c *Call) error {
	if rs == nil {
		return nil
	}
	if _, ok := rs.started[id]; !ok {
		return nil
	}
	if c.delegate() == "" {
		if a, _, err := c.resolveActivity(x.reg); err == nil && (a == nil || isIdempotent(a)) {
			return nil
		}
	}
	return &CallError{Kind: Runtime, Tool: c.Tool, Err: ErrInterrupted}
}

// resumeLoop finishes what a loop run left unfinished when it stopped
// (see run.finish), then goes on with the loop.
func resumeLoop(ctx context.Context, cfg Config, schema json.RawMessage) iter.Seq2[RunEvent, error] {
	return func(yield func(RunEvent, error) bool) {
		rs := cfg.resume
		// A new turn's first request is a new run's (0: none seen).
		if step, open := rs.openStep(); !rs.continued && (open || step > 0 && step == rs.step) {
			// The open step's request was sent with the log as it was
			// when its calls began. A closed one's was too, and the run
			// stopped in the next request, which the resumed run sends
			// again: it marks where that step's request ended, as it did,
			// since the provider may never have read it.
			rs.seen = rs.stepAt[step]
		}
		if len(rs.started) > 0 || len(rs.queued) > 0 {
			// Built before the journal takes the run over: a resume that
			// cannot run the calls (a tool its registry lacks) gives the
			// run back as it found it.
			log, err := message.NewLog(rs.msgs...)
			if err == nil {
				rs.exec, err = planExecutor(ctx, cfg, log)
			}
			if err != nil {
				yield(RunEvent{}, errorf("agent: resume: %w", err))
				return
			}
		}
		loopEvents(ctx, cfg, schema, rs.msgs, rs.step+1, yield)
	}
}

// stepOf returns the step of a loop's call id ("step.position").
func stepOf(id string) (int, bool) {
	s, _, ok := strings.Cut(id, ".")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// openStep returns the last step with a recorded call, and whether its
// tick did not end: no plan message follows its first call entry. (A
// call run in the background can settle after its step's plan.)
func (rs *resumed) openStep() (step int, open bool) {
	step = rs.callStep
	if step == 0 {
		return 0, false
	}
	for _, m := range rs.msgs[rs.stepAt[step]:] {
		if m.Type == message.TypePlan {
			return step, false
		}
	}
	return step, true
}

// unlogged returns the calls that failed before the resume and whose
// error message is not in the log, in the order they failed.
func (rs *resumed) unlogged() []string {
	var ids []string
	for _, id := range rs.failed {
		if !rs.logged[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// finish ends, with the run's scheduler, what the run left unfinished
// when it stopped: the calls of the step it stopped in and those earlier
// steps left running in the background. A call that settled keeps its
// messages. One that started and never settled runs again, in the log it
// started with, when its activity is Idempotent, and fails with
// ErrInterrupted otherwise. One the model wrote that never started (it
// waited for data another call was to write, or for room) runs as it
// would have. Then the open step's plan, in the model's order, and the
// error messages the log lacks are appended, as the step would have.
func (r *run) finish(ctx context.Context, rs *resumed) bool {
	step, open := rs.openStep()
	s := r.sched
	s.step = step
	for _, id := range rs.unlogged() { // they failed first
		s.errs = append(s.errs, taskError{-1, *rs.settled[id]})
	}
	ids := slices.SortedFunc(maps.Keys(rs.calls), func(a, b string) int {
		as, ap := callPosition(a)
		bs, bp := callPosition(b)
		return cmp.Or(cmp.Compare(as, bs), cmp.Compare(ap, bp))
	})
	if rs.exec != nil { // built before the run: its calls count into the run's budget and warnings
		rs.exec.cfg.tree = r.cfg.tree
	}
	// The step's queued calls are weighed by its advisors (calls that
	// started passed already).
	queued := rs.exec
	if raw := rs.advice[strconv.Itoa(step)]; raw != nil {
		ops, err := opinionsOf(raw)
		if err != nil {
			r.fail(errorf("agent: resume: advice of step %d: %w", step, err))
			return false
		}
		r.advice = ops
		if rs.exec != nil {
			x := *rs.exec
			x.council, queued = ops, &x
		}
	}
	// A call run again resolves in the log it started with (later calls
	// may have changed what it read). Calls are prepared in the order they
	// started, mostly, so one log grows from call to call rather than one
	// being built per call; it starts over when a call started earlier.
	var started *message.Log
	startedLog := func(n int) (*message.Log, error) {
		if started == nil || n < started.Len() {
			started = &message.Log{}
		}
		return started, started.Append(rs.msgs[started.Len():n]...)
	}
	prefix := strconv.Itoa(step) + "."
	var plan []json.RawMessage
	var tasks []*task // the calls run again or still to run, in order
	for i, id := range ids {
		if open && strings.HasPrefix(id, prefix) {
			plan = append(plan, rs.calls[id])
		}
		t := &task{id: id, index: i, exec: queued}
		if raw, ok := rs.started[id]; ok {
			t.raw, t.exec, t.approved = raw, rs.exec, true
			t.prepare = func(*message.Log) (*Call, error) {
				at, err := startedLog(rs.at[id])
				if err != nil {
					return nil, err
				}
				c, err := rs.exec.prepareCall(at, raw)
				if err == nil {
					err = rs.exec.interrupted(rs, id, c)
				}
				return c, err
			}
		} else if t.raw, ok = rs.queued[id]; !ok {
			continue // it settled
		}
		// A queued call waits for the calls before it that write what
		// it reads, as it would have in the step (see waitForWriters).
		ready := waitForWriters(t, tasks)
		tasks = append(tasks, t)
		if ready {
			s.add(t)
		}
	}
	if !s.runDown(ctx, false) {
		return false
	}
	if s.cutShort(ctx) { // the step did not end: the next resume ends it
		r.fail(ctx.Err())
		return false
	}
	if open && !s.appendAll([]message.Message{{Type: message.TypePlan, Plan: planOf(plan)}}) {
		return false
	}
	return s.appendAll(s.takeErrors())
}

// callPosition returns the step and the position of a loop's call id
// ("step.position").
func callPosition(id string) (step, pos int) {
	s, p, _ := strings.Cut(id, ".")
	step, _ = strconv.Atoi(s)
	pos, _ = strconv.Atoi(p)
	return step, pos
}
