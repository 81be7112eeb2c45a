package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
	"golang.org/x/term"
)

// runFlags are the flags run and resume share.
type runFlags struct {
	fs                                         *flag.FlagSet
	model, baseURL, store, progress, rendering string
	cacheRetention                             string
	concurrency, maxSteps                      int
	json                                       bool
	lease                                      time.Duration
}

func (f *runFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.model, "model", os.Getenv("ACTS_MODEL"), "`provider:model` for latent calls and the agent loop; ACTS_MODEL sets the default")
	fs.StringVar(&f.baseURL, "base-url", "", "the provider's API base `URL` (OpenAI-compatible servers, proxies)")
	fs.StringVar(&f.store, "store", defaultStore(), "where runs are kept: a SQLite file, memory:, or a postgres:// `URL`; ACTS_STORE sets the default")
	fs.StringVar(&f.progress, "progress", "auto", "the progress bar on standard error (`MODE`): auto (when it is a terminal and --json is not given), always, never")
	fs.IntVar(&f.concurrency, "concurrency", 0, "run at most `N` calls at once (0: the agent's default)")
	fs.IntVar(&f.maxSteps, "max-steps", 0, fmt.Sprintf("end an agent loop after `N` steps (requests); 0: the run's saved limit on resume, else %d. A run that hit it is resumed with a higher one", agent.DefaultMaxSteps))
	fs.BoolVar(&f.json, "json", false, "print one JSON object for scripts")
	fs.DurationVar(&f.lease, "lease", agent.DefaultLeaseTTL, "the lease's `DURATION`: how long the run stays held by this process without renewing it; after a crash, a resume waits this long")
	fs.StringVar(&f.rendering, "rendering", "", "how data reaches the model (`MODE`): cached (each message rendered once, so requests share their prefix with the prompt cache) or snapshot (each identity's merged value); default: the Idea's, else cached")
	fs.StringVar(&f.cacheRetention, "cache-retention", "", "how long the provider keeps the run's prefix in its prompt cache (`MODE`): short, the provider's default (about five minutes), or long, across longer pauses (Anthropic: an hour, each cache write at 2× the input price instead of 1.25×); default: the run's, else short")
}

var runCommand = &command{
	name:     "run",
	synopsis: []string{"run IDEA.json [--input JSON|@FILE] [flags]"},
	summary:  "run an Idea durably in a store",
	doc: `
Runs an Idea ({"schema", "context"}) durably in a store. When the context
has a plan message, its last plan runs, wherever it stands, once per
instance when the inputs are instanced: with no model when its calls all
have code activities, else its latent and delegate calls ask --model.
Otherwise the agent loop runs with --model. --input adds inputs: a JSON
object is one input; a JSON array, or a file of JSON lines, is one
instanced input per element (its _instance, or its position from 1).
When the Idea declares its input (an input message with a schema and no
data), each input must fit that schema. The MCP servers the Idea
lists ("mcp") run while the command does, and one tool message at the start
of the context offers their tools, unless the context offers some of them
itself. No run is created for a command that fails its checks. Ctrl-C stops
the run cleanly (exit status 130) and "acts resume RUN" continues it; exit
status 3 means the run ended with failed calls. Prints a summary (--json:
one JSON object).`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		var rf runFlags
		rf.register(fs)
		input := fs.String("input", "", "the inputs: `JSON` or @FILE, @- for standard input (a JSON object, a JSON array or JSON lines; arrays and lines are instanced)")
		id := fs.String("id", "", "the new run's `ID` (default: a new one)")
		return func(ctx context.Context, env *Env, pos []string) error {
			return runIdea(ctx, env, &rf, pos, *input, *id)
		}
	},
}

// runIdea runs an Idea durably: acts run IDEA.json [--input ...].
func runIdea(ctx context.Context, env *Env, rf *runFlags, pos []string, input, id string) error {
	idea, err := readIdea("run", pos)
	if err != nil {
		return err
	}
	msgs, err := startContext(env, pos[0], idea, input)
	if err != nil {
		return err
	}
	if err := rf.check(); err != nil {
		return err
	}
	st, err := openStore(ctx, rf.store, true)
	if err != nil {
		return err
	}
	defer st.Close()
	runID := id
	if runID == "" {
		runID = platform.NewID(ctx)
	} else if _, err := st.Load(ctx, runID); err == nil {
		return fmt.Errorf("run %s already exists in %s; continue it with: %s resume %s --store %s", runID, storeName(rf.store), env.name(), runID, storeName(rf.store))
	}
	// Every check comes before the run is created: a command that fails
	// leaves no run behind. The agent creates it, atomically: of two
	// commands racing for one id, the second fails.
	cfg, err := rf.config(ctx, env, st, runID, rf.model, rf.baseURL)
	if err != nil {
		return err
	}
	cfg.Origin = pos[0]
	if cfg.Rendering == "" {
		cfg.Rendering = idea.Rendering
	}
	if _, ok := offlinePlan(msgs); !ok && cfg.Provider == nil {
		if env.Providers == nil {
			return fmt.Errorf("%s has no plan to run offline, and %w", pos[0], noProviders(rf.model))
		}
		return fmt.Errorf("%w: %s has no plan to run offline; the agent loop needs --model (or ACTS_MODEL)", errUsage, pos[0])
	}
	// The Idea's MCP servers last, once everything else is checked; the
	// run saves them (cfg.MCP) for acts resume to connect again.
	tools, closeMCP, err := connectMCP(ctx, env, pos[0], idea.MCP)
	if err != nil {
		return err
	}
	defer closeMCP()
	if msgs, err = offerMCP(env.Registry, tools, msgs); err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	cfg.MCP = idea.MCP
	events, total := chooseRun(ctx, cfg, idea.Schema, msgs)
	err = drive(ctx, env, rf, runID, events, total)
	if errors.Is(err, agent.ErrRefused) {
		// The run's first request could not be made of the Idea: its
		// schema or a message of its context is at fault.
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	return err
}

// startContext returns the context a run of the Idea in file starts
// with: its own and the inputs of --input, presets expanded.
func startContext(env *Env, file string, idea *agent.Idea, input string) ([]message.Message, error) {
	check, err := inputCheck(env, file, idea)
	if err != nil {
		return nil, err
	}
	inputs, err := readInput(env.Stdin, input, check)
	if err != nil {
		return nil, err
	}
	msgs, err := agent.ExpandPresets(env.Registry, idea.Presets, append(idea.Context, inputs...))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return msgs, nil
}

// inputCheck returns what checks an input against the input schema the
// Idea in file declares (an input message with a schema and no data, the
// last one as for an Ideator), or nil when it declares none. An input
// that does not fit would otherwise reach the model, and a run be made
// of it, unnoticed.
func inputCheck(env *Env, file string, idea *agent.Idea) (func(json.RawMessage) error, error) {
	var decl json.RawMessage
	for _, m := range idea.Context {
		if m.Type == message.TypeData && m.Kind == message.KindInput && m.Data == nil && m.Schema != nil {
			decl = m.Schema
		}
	}
	if decl == nil {
		return nil, nil
	}
	reg := env.Registry
	if reg == nil {
		reg = agent.DefaultRegistry
	}
	s, err := reg.Schemas().Compile(decl)
	if err != nil {
		return nil, fmt.Errorf("%s: input schema: %w", file, err)
	}
	return func(data json.RawMessage) error {
		if err := s.Validate(data); err != nil {
			return fmt.Errorf("does not fit the input schema of %s: %w", file, err)
		}
		return nil
	}, nil
}

// offlinePlan returns the plan an Idea's context ends with, which runs
// with no model, and whether there is one.
func offlinePlan(msgs []message.Message) ([]json.RawMessage, bool) {
	plan, mode, ok := agent.LastPlan(msgs)
	return plan, ok && mode != agent.PlanLazy && len(plan) > 0
}

// chooseRun picks how an Idea runs: its last plan with no model (per
// instance when the inputs are instanced), or the agent loop.
func chooseRun(ctx context.Context, cfg agent.Config, schema json.RawMessage, msgs []message.Message) (iter.Seq2[agent.RunEvent, error], int) {
	if plan, ok := offlinePlan(msgs); ok {
		if ids := agent.InstanceIDs(msgs); len(ids) > 0 && !instanced(plan) {
			return agent.PlanInstancesEvents(ctx, cfg, plan, msgs), len(plan) * len(ids)
		}
		return agent.PlanEvents(ctx, cfg, plan, msgs), len(plan)
	}
	return agent.Events(ctx, cfg, schema, msgs), 0
}

// instanced reports whether a plan's calls name their instances already.
func instanced(plan []json.RawMessage) bool {
	for _, c := range plan {
		if m, err := message.ParseCallMeta(c); err == nil && m.Instance != "" {
			return true
		}
	}
	return false
}

// check checks the flags, before the store is opened.
func (f *runFlags) check() error {
	if f.lease <= 0 {
		return fmt.Errorf("%w: --lease must be positive, got %s", errUsage, f.lease)
	}
	if f.concurrency < 0 {
		return fmt.Errorf("%w: --concurrency must be 0 (the default) or more, got %d", errUsage, f.concurrency)
	}
	if f.maxSteps < 0 {
		return fmt.Errorf("%w: --max-steps must be 0 (the default) or more, got %d", errUsage, f.maxSteps)
	}
	if err := agent.Rendering(f.rendering).Check(); err != nil {
		return fmt.Errorf("%w: --rendering: %w", errUsage, err)
	}
	if err := provider.CacheRetention(f.cacheRetention).Check(); err != nil {
		return fmt.Errorf("%w: --cache-retention: %w", errUsage, err)
	}
	switch f.progress {
	case "auto", "always", "never":
	default:
		return fmt.Errorf("%w: --progress must be auto, always or never, got %q", errUsage, f.progress)
	}
	return nil
}

// config builds the agent configuration of a run, once check has passed.
// With no Env.Providers, a model the command line did not name is left
// out: the run fails later only if it needs one.
func (f *runFlags) config(ctx context.Context, env *Env, st store.Store, id, model, baseURL string) (agent.Config, error) {
	cfg := agent.Config{Registry: env.Registry, Store: st, RunID: id, Concurrency: f.concurrency, Rendering: agent.Rendering(f.rendering), LeaseTTL: f.lease, MaxSteps: f.maxSteps,
		CacheRetention: provider.CacheRetention(f.cacheRetention)}
	if model == "" || env.Providers == nil && !isSet(f.fs, "model") {
		return cfg, nil
	}
	p, name, err := env.provider(ctx, model, baseURL)
	if err != nil {
		return cfg, err
	}
	cfg.Provider, cfg.Model = p, name
	return cfg, nil
}

var resumeCommand = &command{
	name:     "resume",
	synopsis: []string{"resume RUN [flags]"},
	summary:  "continue a run that was interrupted, failed or forked",
	doc: `
Continues a run from its journal: calls that finished are never run again;
a call that started and did not finish runs again only if its activity is
idempotent or it is latent (the model answers it), and is reported
otherwise. The MCP servers of the run's Idea,
saved with the run, are started again for their tools. An agent loop calls
the endpoint and model the run was made with (and says which on standard
error, once it holds the run) unless --model or --base-url say otherwise.
A run held by another process fails, naming the holder; after a crash its
lease expires and resume takes over. Exit statuses and the summary are those of run.`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		var rf runFlags
		rf.register(fs)
		return func(ctx context.Context, env *Env, pos []string) error {
			return resume(ctx, env, &rf, pos)
		}
	},
}

// resume continues a run: acts resume RUN.
func resume(ctx context.Context, env *Env, rf *runFlags, pos []string) error {
	if len(pos) != 1 {
		return fmt.Errorf("%w: resume takes RUN", errUsage)
	}
	if err := rf.check(); err != nil {
		return err
	}
	st, err := openStore(ctx, rf.store, false)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := st.Load(ctx, pos[0])
	if err != nil {
		return err // the store's error names the run
	}
	// What Resume would refuse, refused before a model or an MCP server
	// is started for nothing.
	if err := run.Lease.Yield(run.ID, "", platform.Now(ctx)); err != nil {
		return fmt.Errorf("resume %s: %w", run.ID, err)
	}
	cfg, saved, err := rf.reopenConfig(ctx, env, st, run, false)
	if err != nil {
		return err
	}
	if saved != nil && run.Status != store.Done {
		// The run's context offers the tools of its Idea's MCP servers,
		// with their definitions: its calls need their activities again.
		_, closeMCP, err := connectMCP(ctx, env, "run "+run.ID, saved.MCP)
		if err != nil {
			return err
		}
		defer closeMCP()
	}
	total := 0
	if run.Kind == "plan" {
		total = planSize(ctx, st, run)
	}
	events := agent.ResumeEvents(ctx, cfg, run.ID)
	if cfg.Provider != nil && run.Status != store.Done { // a done run asks nothing
		events = sayFirst(events, func() { sayEndpoint(env.Stderr, "resuming", run.ID, &cfg) })
	}
	return drive(ctx, env, rf, run.ID, events, total)
}

// sayFirst calls say before the first event of a resume or continuation,
// once it holds the run: not before one that was refused (another
// process holds the run, say), which is as it was.
func sayFirst(events iter.Seq2[agent.RunEvent, error], say func()) iter.Seq2[agent.RunEvent, error] {
	return func(yield func(agent.RunEvent, error) bool) {
		first := true
		for ev, err := range events {
			if first && !errors.Is(err, agent.ErrRefused) {
				say()
			}
			first = false
			if !yield(ev, err) {
				return
			}
		}
	}
}

// reopenConfig returns the configuration that resumes or continues run
// of st, and the settings the run saved (nil for a run from before they
// were): the run's own endpoint and model unless the flags say otherwise
// (resumeEndpoint). An agent loop goes on by asking the model, so one
// left without a provider is an error here, before anything starts,
// unless it is done and only resumed: its result is in its journal.
func (f *runFlags) reopenConfig(ctx context.Context, env *Env, st store.Store, run store.Run, next bool) (agent.Config, *agent.RunSettings, error) {
	saved, err := agent.SavedSettings(run)
	if err != nil {
		return agent.Config{}, nil, err
	}
	model, baseURL := resumeEndpoint(run, saved, f)
	cfg, err := f.config(ctx, env, st, run.ID, model, baseURL)
	if err != nil {
		return cfg, saved, err
	}
	if run.Kind == "loop" && cfg.Provider == nil && (next || run.Status != store.Done) {
		if env.Providers == nil {
			return cfg, saved, fmt.Errorf("run %s is an agent loop, and %w", run.ID, noProviders(model))
		}
		return cfg, saved, fmt.Errorf("%w: run %s is an agent loop and needs --model", errUsage, run.ID)
	}
	return cfg, saved, nil
}

// sayEndpoint says, before the run's context goes, where it goes: the
// endpoint and model of cfg.Provider. A provider that leaves its name or
// URL out (a test double, say) is said without them.
func sayEndpoint(w io.Writer, doing, id string, cfg *agent.Config) {
	var e provider.Endpoint
	if d, ok := cfg.Provider.(provider.Describer); ok {
		e = d.Endpoint()
	}
	where := escapeLine(e.Provider)
	if e.BaseURL != "" {
		where = strings.TrimSpace(where + " at " + escapeLine(e.BaseURL))
	}
	if where != "" {
		where += ", "
	}
	fmt.Fprintf(w, "%s run %s: %smodel %s\n", doing, escapeLine(id), where, escapeLine(cfg.Model))
}

// resumeEndpoint returns the provider:model and base URL a resume calls:
// the flags', else those the run was made with, so that a run made
// against a local server is not sent to a provider's default endpoint.
// ACTS_MODEL, the default of --model, does not count: it names no run.
func resumeEndpoint(run store.Run, saved *agent.RunSettings, rf *runFlags) (model, baseURL string) {
	model, baseURL = rf.model, rf.baseURL
	given := isSet(rf.fs, "model")
	if saved == nil || saved.Endpoint == nil {
		if !given && run.Model != "" {
			model = run.Model // a run from before settings were saved
		}
		return model, baseURL
	}
	e := saved.Endpoint
	// The model the run asked for, or else the adapter's default it was
	// made with (a run a Go program made names its model there).
	if m := cmp.Or(saved.Model, e.Model); !given && m != "" {
		model = e.Provider + ":" + m
	}
	if name, _, _ := strings.Cut(model, ":"); baseURL == "" && name == e.Provider {
		baseURL = e.BaseURL
	}
	return model, baseURL
}

// planSize is the number of calls of a plan run, for the progress bar.
func planSize(ctx context.Context, st store.Store, run store.Run) int {
	var spec struct {
		Plan      []json.RawMessage `json:"plan"`
		Instanced bool              `json:"instanced"`
	}
	if json.Unmarshal(run.Spec, &spec) != nil {
		return 0
	}
	if !spec.Instanced {
		return len(spec.Plan)
	}
	seen := map[string]bool{}
	for e, err := range st.Entries(ctx, run.ID, 0) {
		if err != nil {
			return 0
		}
		if e.Type != store.EntryMessage {
			continue
		}
		// The journal's messages are canonical JSON: these two fields are
		// all it needs of them, not the whole message checked.
		var m struct {
			Type     message.Type `json:"type"`
			Instance string       `json:"_instance"`
		}
		if json.Unmarshal(e.Data, &m) == nil && m.Type == message.TypeData && m.Instance != "" {
			seen[m.Instance] = true
		}
	}
	return len(spec.Plan) * len(seen)
}

// summary is what run and resume print at the end (--json).
type summary struct {
	Run    string       `json:"run"`
	Status store.Status `json:"status"`
	Calls  int          `json:"calls"`
	Failed int          `json:"failed"`
	// Messages is the length of the run's log, left out when the run
	// ended with none to count (it failed before it went anywhere).
	Messages int             `json:"messages,omitempty"`
	Steps    int             `json:"steps,omitempty"`
	Usage    provider.Usage  `json:"usage"`
	Output   json.RawMessage `json:"output,omitempty"`
	// Plan holds the calls the model planned in a lazy run, which ran
	// none of them: they are its result.
	Plan    []json.RawMessage `json:"plan,omitempty"`
	Error   string            `json:"error,omitempty"`
	Seconds float64           `json:"seconds"`
	// ran is set once a call started or a request was made: a run that
	// failed before either is said to have, rather than counted.
	ran bool
}

// drive consumes a run's events: progress, then a summary. A resume or a
// continuation that was refused (agent.ErrRefused: another process holds
// the run, say) ends with no summary, which would call the run failed:
// it is as it was.
func drive(ctx context.Context, env *Env, rf *runFlags, id string, events iter.Seq2[agent.RunEvent, error], total int) error {
	start := platform.Now(ctx)
	bar := newProgress(env.Stderr, rf.progress, total, rf.json)
	s := summary{Run: id, Status: store.Done}
	var res *agent.RunResult
	var runErr error
	for ev, err := range events {
		if err != nil {
			if errors.Is(err, agent.ErrRefused) {
				bar.done()
				return err
			}
			runErr = err
			if errors.Is(err, agent.ErrNoProvider) && rf.model == "" {
				// Latent or delegate calls of a plan, with no model named.
				runErr = fmt.Errorf("%w (give --model provider:model, or set ACTS_MODEL)", err)
			}
			if errors.Is(err, agent.ErrMaxSteps) {
				// The run's limit is saved with it: resumed as it is, it
				// would stop again at once.
				if rf.store == "memory:" {
					runErr = fmt.Errorf("%w; --max-steps N raises the limit", err)
				} else {
					runErr = fmt.Errorf("%w; %s resume %s --store %s --max-steps N goes on with a higher limit", err, env.name(), escapeLine(id), escapeLine(storeName(rf.store)))
				}
			}
			if providerFailed(err) && rf.store != "memory:" {
				// A rate limit or a provider's outage: what the run did
				// is saved, and it goes on once the provider answers.
				runErr = fmt.Errorf("%w; run %s is saved: %s resume %s --store %s goes on from where it stopped", err, escapeLine(id), env.name(), escapeLine(id), escapeLine(storeName(rf.store)))
			}
			if le, ok := errors.AsType[*agent.LimitError](err); ok {
				res = le.Result
			}
			break
		}
		switch ev.Kind {
		case agent.EventCallQueued, agent.EventCallStarted:
			s.ran = true
		case agent.EventCallFinished:
			s.Calls++
			bar.step(ctx, s.Calls, s.Failed)
		case agent.EventCallFailed:
			if ctx.Err() != nil && (errors.Is(ev.Err, context.Canceled) || errors.Is(ev.Err, context.DeadlineExceeded)) {
				// Cut short by Ctrl-C: the call did not end, and resume
				// runs or reports it, as the journal has it.
				continue
			}
			s.Calls++
			s.Failed++
			s.ran = true
			bar.step(ctx, s.Calls, s.Failed)
		case agent.EventDone:
			res = ev.Result
		}
	}
	bar.done()
	s.Seconds = platform.Now(ctx).Sub(start).Seconds()
	if res != nil {
		s.Messages, s.Usage, s.Steps = res.Log.Len(), res.Usage, res.Steps
		s.ran = s.ran || res.Steps > 0 // Steps counts the requests made
		if res.Solution != nil {
			s.Output = res.Solution.Output
		}
		s.Plan = res.Plan
	}
	code := 0
	switch {
	case runErr != nil && (errors.Is(runErr, context.Canceled) || ctx.Err() != nil):
		s.Status, s.Error, code = store.Interrupted, runErr.Error(), ExitInterrupted
	case runErr != nil:
		s.Status, s.Error, code = store.Failed, runErr.Error(), 1
	case s.Failed > 0:
		code = ExitCallsFailed
	}
	if err := printSummary(env, &s, rf); err != nil {
		return err
	}
	switch code {
	case 0:
		return nil
	case ExitInterrupted:
		if rf.store == "memory:" {
			return &exitError{code, fmt.Errorf("interrupted; run %s was in memory (--store memory:) and is gone", id)}
		}
		return &exitError{code, fmt.Errorf("interrupted; run %s is saved: continue it with %s resume %s --store %s", escapeLine(id), env.name(), escapeLine(id), escapeLine(storeName(rf.store)))}
	case ExitCallsFailed:
		if rf.store == "memory:" {
			return &exitError{code, fmt.Errorf("%d of %d calls failed", s.Failed, s.Calls)}
		}
		return &exitError{code, fmt.Errorf("%d of %d calls failed; see %s log %s --store %s", s.Failed, s.Calls, env.name(), escapeLine(id), escapeLine(storeName(rf.store)))}
	}
	return runErr
}

func printSummary(env *Env, s *summary, rf *runFlags) error {
	w := env.Stdout
	if rf.json {
		b, err := marshal(s, "")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "run %s: %s in %.2fs", escapeLine(s.Run), s.Status, s.Seconds)
	if !s.ran && s.Status != store.Done {
		// An invalid plan, a call with no model: nothing to count.
		b.WriteString(", before any call or request\n")
	} else {
		fmt.Fprintf(&b, "\n  calls: %d ok, %d failed\n", s.Calls-s.Failed, s.Failed)
		var counts []string
		if s.Messages > 0 {
			counts = append(counts, fmt.Sprintf("messages: %d", s.Messages))
		}
		if s.Steps > 0 {
			counts = append(counts, fmt.Sprintf("steps: %d", s.Steps))
		}
		if t := s.Usage.Total(); t > 0 {
			counts = append(counts, fmt.Sprintf("tokens: %d", t))
		}
		if len(counts) > 0 {
			fmt.Fprintf(&b, "  %s\n", strings.Join(counts, ", "))
		}
	}
	if s.Output != nil {
		fmt.Fprintf(&b, "  output: %s\n", escapeJSON(string(s.Output)))
	}
	if s.Plan != nil {
		fmt.Fprintf(&b, "  plan (not run): %s\n", count(len(s.Plan), "call"))
		for i, c := range s.Plan {
			var one bytes.Buffer // a call on one line, however the model wrote it
			if json.Compact(&one, c) != nil {
				one.Reset()
				one.Write(c)
			}
			fmt.Fprintf(&b, "    %d: %s\n", i, escapeLine(escapeJSON(one.String())))
		}
	}
	if rf.store == "memory:" {
		// Gone with the command: no later command can read it.
		b.WriteString("  trace: none kept (--store memory:)\n")
	} else {
		// A PostgreSQL URL without its password: a summary may end up in
		// a log.
		fmt.Fprintf(&b, "  trace: %s log %s --store %s\n", env.name(), escapeLine(s.Run), escapeLine(storeName(rf.store)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// providerFailed reports whether err is a failure of the provider: an
// error it answered, or a stream that broke or that it left waiting.
func providerFailed(err error) bool {
	_, ok := errors.AsType[*provider.Error](err)
	return ok || errors.Is(err, provider.ErrTruncated) || errors.Is(err, provider.ErrTimeout)
}

// readInput reads --input: JSON, @FILE, or @- for stdin. check, when not
// nil, checks each input (without its _instance).
func readInput(stdin io.Reader, spec string, check func(json.RawMessage) error) ([]message.Message, error) {
	if spec == "" {
		return nil, nil
	}
	data, name, lines := []byte(spec), "--input", false
	if f, ok := strings.CutPrefix(spec, "@"); ok {
		b, err := readFile(stdin, f)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", spec, err)
		}
		if f == "-" {
			f = "--input @-"
		}
		data, name, lines = b, f, filepath.Ext(f) == ".jsonl"
	}
	data = bytes.TrimSpace(data)
	var elems []json.RawMessage
	var where []string // where each element is, for errors
	switch {
	case len(data) > 0 && data[0] == '[':
		if err := json.Unmarshal(data, &elems); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for i := range elems {
			where = append(where, "element "+strconv.Itoa(i+1))
		}
	case !lines && json.Valid(data):
		if check != nil {
			if err := check(data); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		return []message.Message{{Type: message.TypeData, Kind: "input", Data: data}}, nil
	default:
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 64<<20)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			if !json.Valid(line) {
				return nil, fmt.Errorf("%s: line %d: not valid JSON", name, n)
			}
			elems = append(elems, append(json.RawMessage(nil), line...))
			where = append(where, "line "+strconv.Itoa(n))
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(elems) == 0 {
		// Else a plan would fail later, its inputs unsatisfiable.
		return nil, fmt.Errorf("%s: no inputs", name)
	}
	msgs := make([]message.Message, 0, len(elems))
	whereOf := map[string]string{} // instance id → the input that has it
	for i, e := range elems {
		inst := strconv.Itoa(i + 1)
		if k := jsonKind(e); k != "an object" {
			return nil, fmt.Errorf("%s: %s: an instanced input must be a JSON object, not %s", name, where[i], k)
		}
		var meta struct {
			Instance json.RawMessage `json:"_instance"`
		}
		if err := json.Unmarshal(e, &meta); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, where[i], err)
		}
		if meta.Instance != nil {
			// null would leave the position's id, and "" make the input
			// global data, read by every instance.
			if k := jsonKind(meta.Instance); k != "a string" {
				return nil, fmt.Errorf("%s: %s: _instance must be a string, not %s", name, where[i], k)
			}
			if err := json.Unmarshal(meta.Instance, &inst); err != nil {
				return nil, fmt.Errorf("%s: %s: _instance: %w", name, where[i], err)
			}
			if inst == "" {
				return nil, fmt.Errorf("%s: %s: _instance must not be empty", name, where[i])
			}
			o, err := ojson.Parse(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", name, where[i], err)
			}
			o.Delete("_instance")
			e = o.Bytes()
		}
		if first, ok := whereOf[inst]; ok {
			// Inputs of one instance would merge into one silently.
			return nil, fmt.Errorf("%s: %s and %s are both instance %q: give each input its own _instance", name, first, where[i], inst)
		}
		whereOf[inst] = where[i]
		if check != nil {
			if err := check(e); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", name, where[i], err)
			}
		}
		msgs = append(msgs, message.Message{Type: message.TypeData, Kind: "input", Instance: inst, Data: e})
	}
	return msgs, nil
}

// readWithInput reads file ("-" for standard input), the argument arg
// names, and the inputs of --input (see readInput): only one of them can
// read standard input. When file is an Idea that declares its input, the
// inputs are those acts run would take: each must fit the declaration.
func readWithInput(env *Env, arg, file, input string) ([]byte, []message.Message, error) {
	if file == "-" && input == "@-" {
		return nil, nil, fmt.Errorf("%w: %s - and --input @- both read standard input", errUsage, arg)
	}
	data, err := readFile(env.Stdin, file)
	if err != nil {
		return nil, nil, err
	}
	var check func(json.RawMessage) error
	if idea, err := agent.ParseIdea(data); input != "" && err == nil {
		if check, err = inputCheck(env, file, idea); err != nil {
			return nil, nil, err
		}
	}
	inputs, err := readInput(env.Stdin, input, check)
	if err != nil {
		return nil, nil, err
	}
	return data, inputs, nil
}

// jsonKind names the kind of a JSON value, for errors.
func jsonKind(v json.RawMessage) string {
	switch v = bytes.TrimSpace(v); {
	case len(v) == 0:
		return "nothing"
	case v[0] == '{':
		return "an object"
	case v[0] == '[':
		return "an array"
	case v[0] == '"':
		return "a string"
	case string(v) == "null":
		return "null"
	case string(v) == "true" || string(v) == "false":
		return "a boolean"
	}
	return "a number"
}

// progress draws a progress bar on a terminal.
type progress struct {
	w     io.Writer
	on    bool
	total int
	last  time.Time
	start time.Time
	drawn bool
}

func newProgress(w io.Writer, mode string, total int, asJSON bool) *progress {
	on := mode == "always" || mode == "auto" && !asJSON && isTerminal(w)
	return &progress{w: w, on: on, total: total}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// step redraws the bar, at most ten times a second.
func (p *progress) step(ctx context.Context, calls, failed int) {
	if !p.on {
		return
	}
	now := platform.Now(ctx)
	if p.start.IsZero() {
		p.start = now
	}
	if now.Sub(p.last) < 100*time.Millisecond && calls != p.total {
		return
	}
	p.last, p.drawn = now, true
	el := now.Sub(p.start).Truncate(time.Second)
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%d calls, %d failed  %s ", calls, failed, el)
		return
	}
	const width = 30
	done := min(calls*width/p.total, width)
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d calls %3d%%  %d failed  %s ", strings.Repeat("=", done), strings.Repeat(" ", width-done),
		calls, p.total, calls*100/p.total, failed, el)
}

func (p *progress) done() {
	if p.on && p.drawn {
		fmt.Fprintln(p.w)
	}
}
