package agent

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/jsonstream"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/schema"
	"github.com/augceo/agent/store"
)

// DefaultMaxRepairs is how many times an invalid solution is re-asked when
// Config.MaxRepairs is 0.
const DefaultMaxRepairs = 2

// Config configures a Request. The zero value of every field but Provider
// is a documented default.
type Config struct {
	// Provider answers the request. Required.
	Provider provider.Provider
	// Registry holds handlers, tools and named schemas; nil means
	// DefaultRegistry.
	Registry *Registry
	// Model names the model; empty leaves the provider's default.
	Model string
	// N is the number of solutions (multiplexing); 0 means 1. A provider
	// that answers fewer is asked again for the rest; when it then gives
	// none, or fails, the solutions it gave stand. A solution the provider
	// stopped (a provider.SolutionError: a refusal, a content filter) is
	// none: while others ended well, it is asked again, after a Repair
	// event, and when it stops again the others stand. A call that fails
	// otherwise (a stream cut, an error event) keeps those that arrived
	// whole, their JSON complete and valid, and the rest are asked again
	// the same way. The others stand too when one stays invalid after its
	// repairs, or a repair fails: an Event's Lost, and a warning in the
	// log, name the solution left out and why.
	// A solution left out moves those after it down in
	// Response.Solutions. The request fails only when no solution is
	// left: with N 1, with that solution's error (the provider's, or an
	// *InvalidError); else with a *NoSolutionError, or the provider's
	// error when it stopped every one at once.
	N int
	// Temperature, MaxTokens and Thinking (a reasoning budget in tokens,
	// negative for none) are passed to the provider; zero leaves its default.
	Temperature *float64
	MaxTokens   int
	Thinking    int
	// Stream asks the provider for a stream. CallbackPath implies it.
	Stream bool
	// CallbackPath is a dot path into the solution, such as "calls": each
	// element of the array there is handed over as an Event as soon as it
	// is complete, while the rest still streams.
	CallbackPath string
	// MaxRepairs bounds how often an invalid solution is re-asked with its
	// errors shown to the model; 0 means DefaultMaxRepairs, negative none.
	MaxRepairs int
	// Logger receives debug logs; nil means slog.Default().
	Logger *slog.Logger

	// The loop (Run) uses the settings below; a single Request ignores them.

	// MaxSteps bounds the requests of a run (of a turn, for Continue);
	// 0 means DefaultMaxSteps.
	MaxSteps int
	// MaxCallsPerStep bounds the calls one solution may make; 0 means
	// DefaultMaxCallsPerStep.
	MaxCallsPerStep int
	// TokenBudget stops the run before a step once usage has reached it
	// (the turn's usage, for Continue); 0 means no budget. The requests of
	// a step's latent calls and repairs are not held back. Delegates'
	// sub-runs count into it as they go, and stop when it is spent.
	TokenBudget int
	// Concurrency bounds the calls running at once; 0 means
	// DefaultConcurrency.
	Concurrency int
	// Confirm, when set, sees every call that is ready to run and decides
	// whether it runs (human in the loop). It is called on the run's
	// goroutine, one call at a time. An error, or a panic, ends the run.
	Confirm func(ctx context.Context, call *Call) (Decision, error)
	// Clock gives the time written into output messages; nil means the
	// wall clock.
	Clock platform.Clock
	// MaxDepth bounds nested delegates (014); 0 means DefaultMaxDepth.
	MaxDepth int
	// Ideas is where delegates' Idea files are read from when they are
	// not registered with Registry.Idea; nil means registered ones only.
	Ideas fs.FS

	// Store, when set, makes runs and plan executions durable: every
	// message, call start and call end is in the store before anything
	// depends on it, and Resume continues the run after a crash. A store
	// that is also a store.Catalog keeps metadata saved before the run
	// starts (Idea, Model).
	Store store.Store
	// RunID names the run in Store; empty means a new id. A run whose id
	// is taken fails (store.ErrExists): continue it with Resume.
	RunID string
	// Origin says where a durable run came from, such as an Idea file's
	// path; it is saved as store.Run.Idea.
	Origin string
	// MCP lists the MCP servers whose tools Registry holds for the run
	// (an Idea's MCP, connected by package mcp). The agent neither
	// connects nor reads them: a durable run saves them with its settings
	// (RunSettings.MCP), so that a program resuming it can connect them
	// again, as acts resume does.
	MCP []MCPServer
	// LeaseTTL is how long a durable run stays held by this process
	// without renewing its lease (see lease.go); it is renewed every
	// third of it while the run works. 0 means DefaultLeaseTTL.
	LeaseTTL time.Duration

	// Fanout starts the calls of a run (see platform.Fanout); nil means a
	// goroutine per call.
	Fanout platform.Fanout

	// Rendering is how data reaches the model: RenderCached when empty
	// (every message rendered once, so requests share their prefix with
	// the provider's prompt cache) or RenderSnapshot.
	Rendering Rendering
	// CompactAt is the estimated size of a run's rendered context, in
	// tokens, past which the loop compacts it (see compaction.go): 0 means
	// DefaultCompactAt, negative never. RenderSnapshot never compacts.
	CompactAt int
	// CacheKey names the requests that share a prefix for providers that
	// route by it (provider.Request.CacheKey); empty means a key made from
	// the run's first message and composed schema, so runs of one agent
	// share it. A latent call's requests and a delegate's sub-run, whose
	// prefixes differ from the run's, take it followed by "/" and the
	// tool's or the Idea's name.
	CacheKey string
	// CacheRetention is how long the provider should keep the run's
	// prefix in its prompt cache (provider.CacheRetention):
	// provider.CacheShort is the provider's default, a few minutes;
	// provider.CacheLong keeps it across longer pauses (a conversation's
	// user taking time to answer), at a higher price per cache write on
	// Anthropic. Empty is the provider's default too, but for Resume and
	// Continue, where it means the run's own.
	CacheRetention provider.CacheRetention
	// Veto is how the advisors' tally (017) acts on the calls of a step:
	// a call is refused when its tool's share of the votes is below Veto
	// times the share of the advisors' favourite (see advisor.go). 0
	// means DefaultVeto; negative turns it off, and advice is only
	// reported.
	Veto float64

	resume *resumed // set by Resume: the journal of the earlier attempt
	// lazy, set for a request that only plans (012, lazy mode), offers no
	// tool an _output: nothing runs, so no model writes a result.
	lazy bool
	// advising, set by the loop when advisors are active, hands over the
	// solution's advisors as soon as they are written (Event.advisors):
	// its calls wait for them.
	advising bool
	// ticks, set by the loop, marks the end of each chunk's elements
	// (Event.tick), so the calls of a chunk start together.
	ticks bool
	// tree is what the requests of a run (its delegates' sub-runs'
	// included), of a plan or of one Request share; set by each, when
	// nil, and copied with the Config.
	tree *runTree
	// contextLen, set by the loop, is how many messages its context had:
	// an instance that appears after them, in a call's output or after a
	// plan opens _instance (see Build.instancesOpen), and a call must name
	// an instance of the data.
	// 0 (a Request, a plan, a run journaled before it was kept): the
	// instances are an enum of those known, however they came.
	contextLen int
}

// registry returns the Registry c names, or DefaultRegistry.
func (c *Config) registry() *Registry {
	if c.Registry == nil {
		return DefaultRegistry
	}
	return c.Registry
}

// Solution is one validated answer of the model. Its fields are the
// caller's: none shares memory with another or with the answer.
type Solution struct {
	// Raw is the whole solution object as the model wrote it; its meta
	// also has the parts of the current meta that the meta schema could
	// not offer the model, as they were (see docs/request.md).
	Raw json.RawMessage
	// Output is the value of output; nil when the model left it null
	// (in a loop: not done yet).
	Output json.RawMessage
	// Calls are the tool calls the model asked for, in order.
	Calls []json.RawMessage
}

// Done reports whether the solution has an output.
func (s *Solution) Done() bool { return s.Output != nil }

// Field returns a copy of another property of the solution (meta,
// advisors, ...), or nil when absent.
func (s *Solution) Field(name string) json.RawMessage {
	o, err := ojson.Parse(s.Raw)
	if err != nil {
		return nil
	}
	return bytes.Clone(o.Get(name))
}

// Response is the result of a Request.
type Response struct {
	Solutions []Solution
	// Usage sums every provider call the request made, repairs included.
	Usage provider.Usage
	// UsageLost says that Usage lacks what a provider call was billed,
	// which the provider did not say: its stream broke after every
	// solution had ended well, before the usage (OpenAI says it in a
	// chunk of its own after the answer), or the server does not report
	// usage (an OpenAI-compatible server that ignores
	// stream_options.include_usage); see provider.Chunk.UsageLost. The
	// solutions stand; Config.Logger has a warning of it too, once per
	// run.
	UsageLost bool
	// Sent is what the provider was first asked: rendered messages, the
	// composed schema and the settings.
	Sent *provider.Request
}

// Event is one thing that happened during a streamed Request. Exactly
// one field is set.
type Event struct {
	// Thinking continues the model's visible reasoning for a solution.
	Thinking *Text
	// Output continues the output of a solution as the model writes it.
	// After a Repair event, the pieces of the answer being re-asked start
	// again.
	Output *Output
	// Element is a completed element at Config.CallbackPath. After a
	// Repair event, the elements of the answer being re-asked come again.
	Element *Element
	// Repair reports an invalid solution that is being re-asked, or one
	// the provider stopped, or that a failed call cut, that is being
	// asked again (see Config.N; its Err is then the provider's error).
	Repair *InvalidError
	// Lost reports a solution left out of the Response (see Config.N):
	// it stayed invalid after its repairs, a repair failed, or, asked
	// again, the provider stopped it or failed before it arrived whole.
	// Err says why and Raw is its last answer; its events yielded
	// before are not taken back, and none follows. Response.Solutions
	// are the solutions without a Lost event, in order; when none is
	// left, the stream ends with a *NoSolutionError instead.
	Lost *InvalidError
	// Response is the final result, the last event.
	Response *Response

	// advisors is the solution's advisors property, complete (see
	// Config.advising).
	advisors json.RawMessage
	// tick follows the elements of one chunk: a loop starts them together
	// (one journal write for their starts).
	tick bool
}

// Text is a piece of text of one solution.
type Text struct {
	Index int
	Text  string
}

// Element is a completed value at the callback path of solution Index.
// Its Value and Path are the receiver's to keep and change.
type Element struct {
	Index int // the solution
	jsonstream.Element
}

// Request runs one LLM invocation: it renders the context through the
// registry's handlers, composes the output schema around schema, asks the
// provider and validates every solution, re-asking with the errors when
// one is invalid. An error after the provider counted tokens says them
// ([UsageOf]): a failed call may be billed.
func Request(ctx context.Context, cfg Config, schema json.RawMessage, context []message.Message) (*Response, error) {
	var resp *Response
	for ev, err := range Stream(ctx, cfg, schema, context) {
		if err != nil {
			return resp, err
		}
		if ev.Response != nil {
			resp = ev.Response
		}
	}
	return resp, nil
}

// Stream is Request as a stream of events: thinking text and callback
// elements while the answer arrives, repairs, solutions left out, and
// finally the Response.
// It is single-use and runs on the caller's goroutine; breaking out of it
// cancels the provider call.
func Stream(ctx context.Context, cfg Config, userSchema json.RawMessage, msgs []message.Message) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if cfg.Provider == nil {
			yield(Event{}, ErrNoProvider)
			return
		}
		_, log, err := contextLog(&cfg, msgs)
		if err != nil {
			yield(Event{}, err)
			return
		}
		if cfg.tree == nil {
			cfg.tree = new(runTree)
		}
		p, err := prepare(ctx, cfg, userSchema, log)
		if err != nil {
			yield(Event{}, err)
			return
		}
		p.stream(ctx, cfg, yield)
	}
}

// contextLog expands the presets of a context (see ExpandPresets) and
// returns it with its log.
func contextLog(cfg *Config, msgs []message.Message) ([]message.Message, *message.Log, error) {
	msgs, err := ExpandPresets(cfg.registry(), nil, msgs)
	if err != nil {
		return nil, nil, errorf("agent: context: %w", err)
	}
	log, err := message.NewLog(msgs...)
	if err != nil {
		return nil, nil, errorf("agent: context: %w", err)
	}
	return msgs, log, nil
}

// prepared is a request ready to send.
type prepared struct {
	build    *Build
	composed json.RawMessage
	compiled *schema.Schema
	cacheKey string
	// unstable: the messages of a Build prepared afresh do not extend
	// those of the loop's request before, so none is marked stable.
	unstable bool
}

// stream sends a prepared request and validates its solutions.
func (p *prepared) stream(ctx context.Context, cfg Config, yield func(Event, error) bool) {
	req := new(provider.Request)
	*req = *p.build.LLM
	req.Messages = p.build.messages
	req.Schema = p.composed
	req.SchemaName = "solution"
	req.CacheKey = p.cacheKey
	if n := len(req.Messages); n > 0 && p.build.rendering != RenderSnapshot && !p.unstable {
		// Every message rendered so far is sent again unchanged by the
		// next request of a run, or the next turn of a chat; for a Build
		// prepared afresh, that is a bet the requests before won.
		req.Messages[n-1].Stable = true
	}
	resp := &Response{Sent: req}
	var whole func(string) bool
	if req.N > 1 {
		// What arrived whole of a call that failed stands (see generate).
		whole = func(text string) bool {
			_, err := validSolution(text, p.compiled, p.build.solutionChecks)
			return err == nil
		}
	}
	given, err := generate(ctx, cfg, req, whole, resp, yield)
	if err != nil {
		if err != errStopped {
			yield(Event{}, withUsage(err, resp.Usage))
		}
		return
	}
	n := max(req.N, 1)
	var lost []*InvalidError
	// lose leaves solution inv.Index out: the others may stand (see
	// Config.N).
	lose := func(inv *InvalidError) bool {
		inv.Usage = resp.Usage
		lost = append(lost, inv)
		logger(cfg).WarnContext(ctx, "a solution is left out", "index", inv.Index, "error", inv.Err)
		return yield(Event{Lost: inv}, nil)
	}
	for _, g := range given {
		if g.lost != nil {
			if !lose(g.lost) {
				return
			}
			continue
		}
		sol, inv, err := repair(ctx, cfg, req, p.compiled, p.build.solutionChecks, g.index, g.text, g.finish, resp, yield)
		switch {
		case err == errStopped:
			return
		case err != nil && (n == 1 || ctx.Err() != nil):
			// The one solution asked for, or a request cancelled: its
			// own error, as it is; the others would only be left out too.
			if inv, ok := err.(*InvalidError); ok {
				inv.Usage = resp.Usage
			} else {
				err = withUsage(err, resp.Usage)
			}
			yield(Event{}, err)
			return
		case err != nil:
			if err != error(inv) { // a repair request failed
				inv = &InvalidError{Index: inv.Index, Attempts: inv.Attempts, Raw: inv.Raw,
					Err: errorf("%w; its repair failed: %w", inv.Err, err)}
			}
			if !lose(inv) {
				return
			}
			continue
		}
		if p.build.metaKeep != nil {
			sol.Raw = p.build.metaKeep(sol.Raw)
		}
		resp.Solutions = append(resp.Solutions, *sol)
	}
	if len(resp.Solutions) == 0 {
		yield(Event{}, &NoSolutionError{N: n, Lost: lost, Usage: resp.Usage})
		return
	}
	yield(Event{Response: resp}, nil)
}

// errInvalidJSON marks an answer that is not JSON at all.
var errInvalidJSON = errors.New("invalid JSON")

// errStopped means the consumer stopped the stream.
var errStopped = errors.New("agent: stream stopped")

// prepare runs the handlers over log and composes and compiles the schema.
func prepare(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log) (*prepared, error) {
	return prepareBuild(ctx, cfg, userSchema, log, false, false)
}

// prepareBuild is prepare. With toolsOnly, for a caller that only needs
// the tools, nothing is rendered (the handlers run all the same, and
// their errors stand). With anyCalls, solutions are validated with calls
// as any objects (see Build.compose): a loop checks each call on its own.
func prepareBuild(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log, toolsOnly, anyCalls bool) (*prepared, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	llm := llmSettings(cfg)
	b := &Build{Log: log, Registry: cfg.registry(), LLM: &llm, toolsOnly: toolsOnly, shown: map[message.Identity]bool{},
		rendering: cfg.Rendering, seen: &message.Log{}, lazy: cfg.lazy, contextLen: cfg.contextLen}
	if err := b.handleNew(ctx); err != nil {
		return nil, err
	}
	p := &prepared{build: b}
	return p, p.compose(cfg, userSchema, anyCalls)
}

// prepareNext prepares the next request of a loop whose last request was
// prev. Under RenderCached, a message renders the same whatever follows
// it, so prev's Build goes on: only the messages appended since are
// handled, and the schema is composed again only when a tool or property
// changed. A Build that handled a message whose rendering may change
// (see Build.fresh) is prepared afresh.
func prepareNext(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log, anyCalls bool, prev *prepared) (*prepared, error) {
	if prev != nil && prev.build.Log == log && prev.build.handled == log.Len() {
		// Nothing was appended since prev (a continued turn's first
		// request was prepared before the turn was journaled, a step may
		// add nothing): prev's Build and schemas stand, whatever the
		// rendering, and this request marks its end as any other does.
		return &prepared{build: prev.build, composed: prev.composed, compiled: prev.compiled, cacheKey: prev.cacheKey}, nil
	}
	if prev == nil || prev.build.rendering == RenderSnapshot {
		return prepareBuild(ctx, cfg, userSchema, log, false, anyCalls)
	}
	if prev.build.fresh {
		return prepareAfresh(ctx, cfg, userSchema, log, anyCalls, prev)
	}
	b := prev.build
	b.changed = false
	if err := b.handleNew(ctx); err != nil {
		return nil, err
	}
	if b.fresh { // a message that does not allow it arrived
		return prepareAfresh(ctx, cfg, userSchema, log, anyCalls, prev)
	}
	p := &prepared{build: b, composed: prev.composed, compiled: prev.compiled, cacheKey: prev.cacheKey}
	if !b.changed {
		return p, nil
	}
	return p, p.compose(cfg, userSchema, anyCalls)
}

// prepareSeen prepares the Build of the first n messages of log, with its
// last rendered message marked stable, for prepareNext to go on from: a
// resumed run's last request before the interruption was sent with them,
// so its next request marks where that one ended, as if the run had not
// stopped.
func prepareSeen(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log, anyCalls bool, n int) (*prepared, error) {
	head, err := message.NewLog(log.Messages()[:n]...)
	if err != nil {
		return nil, err
	}
	p, err := prepareBuild(ctx, cfg, userSchema, head, false, anyCalls)
	if err != nil {
		return nil, err
	}
	p.build.Log = log // the rest is handled from the whole log
	if k := len(p.build.messages); k > 0 {
		p.build.messages[k-1].Stable = true
	}
	return p, nil
}

// prepareAfresh prepares the next request of a loop from the whole log,
// as a message whose rendering may change arrived (see Build.fresh). When
// the messages still extend those of prev, the request marks them stable
// as a loop's requests do: where prev ended, and at its own end. When
// they do not, it marks none.
func prepareAfresh(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log, anyCalls bool, prev *prepared) (*prepared, error) {
	p, err := prepareBuild(ctx, cfg, userSchema, log, false, anyCalls)
	if err != nil {
		return nil, err
	}
	before, now := prev.build.messages, p.build.messages
	p.unstable = len(before) > len(now) || !slices.EqualFunc(before, now[:len(before)], func(a, b provider.Message) bool {
		return a.Role == b.Role && a.Text == b.Text
	})
	if !p.unstable && len(before) > 0 {
		now[len(before)-1].Stable = true
	}
	return p, nil
}

// compose composes and compiles p's schemas: the one sent, and the one
// solutions are validated against (with anyCalls, calls as any objects).
func (p *prepared) compose(cfg Config, userSchema json.RawMessage, anyCalls bool) error {
	b := p.build
	output, defs, err := outputSchema(userSchema)
	if err != nil {
		return errorf("agent: output schema: %w", err)
	}
	if p.composed, p.compiled, err = b.solutionSchema(output, defs, false); err != nil {
		return err
	}
	// The provider cannot see the registry: the schemas a tool or the
	// output names by {"$ref":"Name"} go into the composed schema's $defs.
	if p.compiled.NamesSchemas() {
		if p.composed, err = b.Registry.Schemas().Adapt(p.composed, schema.Full); err != nil {
			return errorf("agent: composed schema: %w", err)
		}
	}
	if anyCalls && len(b.tools.Keys) > 0 {
		if _, p.compiled, err = b.solutionSchema(output, defs, true); err != nil {
			return err
		}
	}
	p.cacheKey = cfg.CacheKey
	if p.cacheKey == "" {
		// Runs of one agent start alike: their first message and their
		// schema name the prefix they share.
		h := sha256.New()
		if len(b.messages) > 0 {
			h.Write([]byte(b.messages[0].Text))
		}
		h.Write(p.composed)
		p.cacheKey = hex.EncodeToString(h.Sum(nil)[:8])
	}
	return nil
}

// solutionSchema composes the schema of a solution and compiles it.
func (b *Build) solutionSchema(output json.RawMessage, outputDefs []schema.Def, anyCalls bool) (json.RawMessage, *schema.Schema, error) {
	composed, err := b.compose(output, outputDefs, anyCalls)
	if err != nil {
		return nil, nil, errorf("agent: %w", err)
	}
	compiled, err := b.Registry.compile(composed)
	if err != nil {
		return nil, nil, errorf("agent: %w", b.invalidPart(output, outputDefs, err))
	}
	return composed, compiled, nil
}

// invalidPart says which part of a composed schema that does not compile
// (err) is at fault: the first tool whose own schema does not compile, or
// the output. The composed schema's error alone locates it in a schema
// the user never wrote ("/properties/calls/items/..."). Only a failure
// pays for the search.
func (b *Build) invalidPart(output json.RawMessage, outputDefs []schema.Def, err error) error {
	for i, sh := range b.shapes {
		if _, terr := sh.compiledCheck(b.Registry); terr != nil {
			return fmt.Errorf("tool %q: %w", b.shapeNames[i], terr)
		}
	}
	if _, oerr := b.Registry.compile(withDefs(output, outputDefs)); oerr != nil {
		return fmt.Errorf("output schema: %w", oerr)
	}
	return fmt.Errorf("composed schema: %w", err)
}

// handleNew runs the handlers of the messages of the log not handled yet.
func (b *Build) handleNew(ctx context.Context) error {
	for i := b.handled; i < b.Log.Len(); i++ {
		m := b.Log.At(i)
		if err := b.handle(ctx, i, &m); err != nil {
			return err
		}
		b.handled = i + 1
	}
	return nil
}

// handle runs the handler of m, message i of the log.
func (b *Build) handle(ctx context.Context, i int, m *message.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h, err := b.Registry.handler(m.Type)
	// A built-in handler renders a message from it and the messages
	// before it alone, so a loop may handle only the messages new since
	// its last step; a handler of the user's may not.
	builtin := b.Registry.builtinType(m.Type)
	b.fresh = b.fresh || !builtin
	if m.Type == message.TypePlan && !b.planned {
		b.planned = true
		b.changed = b.changed || len(b.advisors) > 0 // start advisors fall silent, finish advisors speak
	}
	if err == nil {
		b.Index = i
		before := len(b.messages)
		err = h.Handle(ctx, b, m)
		if err == nil && !builtin && len(b.messages) > before {
			if b.own == nil {
				b.own = map[int][]provider.Message{}
			}
			b.own[i] = slices.Clone(b.messages[before:]) // for a compaction to keep
		}
	}
	if err != nil {
		return &MessageError{Index: i, Type: string(m.Type), Err: err}
	}
	return nil
}

// check reports the settings of cfg that are not among the known ones.
func (cfg *Config) check() error {
	if err := cfg.Rendering.Check(); err != nil {
		return errorf("agent: %w", err)
	}
	if err := cfg.CacheRetention.Check(); err != nil {
		return errorf("agent: %w", err)
	}
	return nil
}

// llmSettings returns the request settings cfg gives, before handlers
// change them.
func llmSettings(cfg Config) provider.Request {
	n := cfg.N
	if n <= 0 {
		n = 1
	}
	return provider.Request{
		Model: cfg.Model, N: n, Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens,
		Thinking: cfg.Thinking, Stream: cfg.Stream || cfg.CallbackPath != "",
		CacheRetention: cfg.CacheRetention,
	}
}

// answer is one solution's text as it arrives, with the extractor of its
// callback elements (nil without a callback path, or after a syntax
// error, which validation then reports).
type answer struct {
	text   strings.Builder
	finish string // the provider's finish reason
	x      *jsonstream.Extractor
	out    *outputTap
	adv    *jsonstream.Extractor // the advisors (Config.advising)
	// stopped marks a solution the provider did not give whole: it
	// stopped it before its end (a provider.SolutionError names it), or
	// the call failed before it arrived whole. Its text is no solution;
	// why says what took it: the SolutionError, or the call's error.
	stopped bool
	why     error
	done    bool // whether its last chunk (Done) came
}

// given is the text of one solution as the provider gave it, or why it
// has none.
type given struct {
	index  int    // the solution, as its events number it
	text   string // its text
	finish string // the provider's finish reason
	// lost, for a solution the provider answered but did not give in the
	// end (it stopped it, or failed while it was asked again), says why.
	lost *InvalidError
}

// generate runs one provider call, yielding thinking and callback
// elements as they arrive, and returns the text of each solution, in
// order. A provider that answers fewer than req.N solutions (a server that
// ignores n) is asked again for the rest, each time for what is missing,
// while it answers at least one. One that stopped some solutions (a
// provider.SolutionError: a refusal, a content filter) while others ended
// well is asked again for those, each in its own place, after a Repair
// event for it. So is, with whole set (several solutions asked), one that
// had not arrived whole when a call failed otherwise (a stream cut, an
// error event): whole says which texts did, those whose JSON is complete
// and valid. When the provider then gives none, fails, or stops one
// again, the solutions it gave stand: they were paid for. Those it had
// answered and did not give are returned lost, with why; those it never
// answered are left out. With none given, or every one stopped or cut,
// the request fails with the provider's error.
func generate(ctx context.Context, cfg Config, req *provider.Request, whole func(string) bool, resp *Response, yield func(Event, error) bool) ([]given, error) {
	var answers []*answer
	err := send(ctx, &cfg, req, nil, &answers, resp, yield)
	if err != nil && (err == errStopped || ctx.Err() != nil || !settle(err, nil, answers, whole)) {
		return nil, err
	}
	if _, stop := errors.AsType[provider.SolutionError](err); err != nil && !stop {
		// The solutions that arrived whole stand; the others are asked
		// for again below.
		logger(cfg).WarnContext(ctx, "the provider failed after some solutions arrived whole", "whole", count(answers), "n", max(req.N, 1), "error", err)
	}
	if len(answers) == 0 {
		return nil, errorf("agent: provider: empty answer")
	}
	n := max(req.N, 1)
	// Of each solution: how many answers it had, the text of the last one
	// taken back, and why that was.
	tries, raws, why := make([]int, n), make([]string, n), make([]error, n)
	for i, a := range answers {
		if a != nil {
			tries[i]++
		}
	}
	for {
		// Where the solutions asked for go: the places of those stopped
		// and of those never given.
		var slots []int
		for i := range max(n, len(answers)) {
			if i >= len(answers) || answers[i] == nil || answers[i].stopped {
				slots = append(slots, i)
			}
		}
		if len(slots) == 0 {
			break
		}
		logger(cfg).DebugContext(ctx, "asking for the solutions the provider did not give", "given", count(answers), "n", n, "error", err)
		for _, i := range slots {
			if i < len(answers) && answers[i] != nil { // stopped: its pieces start again
				raws[i], why[i] = answers[i].text.String(), cmp.Or(answers[i].why, stopErr(err))
				inv := &InvalidError{Index: i, Attempts: tries[i], Raw: raws[i], Err: why[i]}
				if !yield(Event{Repair: inv}, nil) {
					return nil, errStopped
				}
				answers[i] = nil
			}
		}
		more := *req
		more.N = len(slots)
		err = send(ctx, &cfg, &more, slots, &answers, resp, yield)
		if err == errStopped || ctx.Err() != nil {
			return nil, cmp.Or(err, ctx.Err())
		}
		given := 0
		for _, i := range slots {
			if i < len(answers) && answers[i] != nil {
				given++
				tries[i]++
			}
		}
		if err != nil {
			for _, i := range slots {
				if (i >= len(answers) || answers[i] == nil) && why[i] != nil {
					// Taken back, then not given by the call that asked
					// again: lost for both.
					why[i] = errorf("%w; asked again: %w", why[i], err)
				}
			}
		}
		if err != nil && !settle(err, slots, answers, whole) {
			for _, i := range slots {
				if i < len(answers) && answers[i] != nil {
					// What a failed stream left is no solution; its
					// text stays with why.
					raws[i], why[i] = answers[i].text.String(), err
					answers[i] = nil
				}
			}
		}
		if err != nil || given == 0 {
			logger(cfg).WarnContext(ctx, "the provider gave fewer solutions than asked", "given", count(answers), "n", n, "error", err)
			break
		}
	}
	var out []given
	for i, a := range answers {
		switch {
		case a != nil && a.stopped: // stopped, or cut, by the last call
			inv := &InvalidError{Index: i, Attempts: tries[i], Raw: a.text.String(), Err: cmp.Or(a.why, stopErr(err))}
			out = append(out, given{index: i, lost: inv})
			continue
		case a == nil && why[i] != nil:
			out = append(out, given{index: i, lost: &InvalidError{Index: i, Attempts: tries[i], Raw: raws[i], Err: why[i]}})
			continue
		case a == nil:
			continue
		}
		if a.x != nil {
			els, xerr := a.x.End()
			if !emit(i, els, yield) {
				return nil, errStopped
			}
			_ = xerr // a syntax error: validation reports it
		}
		out = append(out, given{index: i, text: a.text.String(), finish: a.finish})
	}
	return out, nil
}

// settle reports whether err, which ended a provider call whose
// solutions went to slots (nil: numbered from 0), leaves at least one
// solution of answers good, and marks stopped those of the call that it
// took: the solutions a provider.SolutionError names, and, for any other
// error, each one whose text whole does not take. An error of both (a
// stream that broke after the provider had stopped some solutions) takes
// those it names and those it cut: the ones that had not ended, unless
// whole takes their text. With whole nil, any other error fails the
// call: one solution asked fails as it always did.
func settle(err error, slots []int, answers []*answer, whole func(string) bool) bool {
	se, ok := errors.AsType[provider.SolutionError](err)
	if !ok && whole == nil {
		return false
	}
	mark := func(i int, why error) {
		if i >= 0 && i < len(answers) && answers[i] != nil && !answers[i].stopped {
			answers[i].stopped, answers[i].why = true, why
		}
	}
	if ok {
		for _, k := range se.Solutions() {
			i := k
			if slots != nil {
				if k < 0 || k >= len(slots) {
					continue
				}
				i = slots[k]
			}
			mark(i, se)
		}
	}
	// A solution whose JSON is complete and valid lost nothing to the
	// failure: the rest of the stream was another's.
	took := slots
	if took == nil {
		took = make([]int, len(answers))
		for i := range took {
			took[i] = i
		}
	}
	for _, i := range took {
		if i >= len(answers) || answers[i] == nil || ok && answers[i].done {
			continue // with a SolutionError, those that ended and it does not name ended well
		}
		if whole == nil || !whole(answers[i].text.String()) {
			mark(i, err)
		}
	}
	return count(answers) > 0
}

// count returns how many of answers are solutions: given, and not
// stopped.
func count(answers []*answer) int {
	n := 0
	for _, a := range answers {
		if a != nil && !a.stopped {
			n++
		}
	}
	return n
}

// stopErr returns the provider.SolutionError that err wraps, for the
// Repair event of a solution it stopped.
func stopErr(err error) error {
	if se, ok := errors.AsType[provider.SolutionError](err); ok {
		return se
	}
	return err
}

// send streams one provider call into answers, its solution k going to
// answers[slots[k]] (to answers[k] when slots is nil).
func send(ctx context.Context, cfg *Config, req *provider.Request, slots []int, answers *[]*answer, resp *Response, yield func(Event, error) bool) error {
	var err error
	stopped := false
	// A plain function rather than a range loop: a faulty provider that
	// yields again after being stopped is ignored, not a panic.
	cfg.Provider.Generate(ctx, req)(func(c *provider.Chunk, cerr error) bool {
		if stopped {
			return false
		}
		if cerr == nil && c != nil && c.Usage != nil && cfg.tree != nil {
			cfg.tree.spent.Add(int64(c.Usage.Total()))
		}
		if cerr == nil && c != nil && c.UsageLost {
			resp.UsageLost = true
			if cfg.tree == nil || cfg.tree.usageWarned.CompareAndSwap(false, true) {
				logger(*cfg).WarnContext(ctx, "the provider did not say the usage of a call (its stream broke after the answer, or the server does not report usage): the usage lacks what the call was billed, and a TokenBudget does not count it")
			}
		}
		if err = readChunk(cfg, req.N, slots, answers, resp, yield, c, cerr); err != nil {
			stopped = true
			return false
		}
		return true
	})
	return err
}

// readChunk takes one chunk of the provider's stream, whose solution k
// goes to answers[slots[k]] (to answers[k] when slots is nil).
func readChunk(cfg *Config, n int, slots []int, answers *[]*answer, resp *Response, yield func(Event, error) bool, c *provider.Chunk, err error) error {
	if err != nil {
		if strings.HasPrefix(err.Error(), "provider: ") { // the provider package's own errors say so
			return errorf("agent: %w", err)
		}
		return errorf("agent: provider: %w", err)
	}
	if c.Index < 0 || c.Index >= max(n, 1) {
		return errorf("agent: provider: chunk for solution %d of %d", c.Index, n)
	}
	if c.UsageOnly() {
		// What a failed call used (see provider.Chunk.Usage): no
		// solution of its own.
		if c.Usage != nil {
			resp.Usage.Add(*c.Usage)
		}
		return nil
	}
	i := c.Index
	if slots != nil {
		i = slots[c.Index]
	}
	for len(*answers) <= i {
		*answers = append(*answers, nil)
	}
	if (*answers)[i] == nil {
		a := &answer{out: newOutputTap()}
		if cfg.CallbackPath != "" {
			if a.x, err = jsonstream.NewExtractor(cfg.CallbackPath); err != nil {
				return errorf("agent: callback path: %w", err)
			}
		}
		if cfg.advising {
			a.adv, _ = jsonstream.NewValueExtractor("advisors") // a valid path
		}
		(*answers)[i] = a
	}
	if c.Usage != nil {
		resp.Usage.Add(*c.Usage)
	}
	if c.Thinking != "" && !yield(Event{Thinking: &Text{Index: i, Text: c.Thinking}}, nil) {
		return errStopped
	}
	a := (*answers)[i]
	if c.Done {
		a.finish, a.done = c.FinishReason, true
	}
	if c.Text == "" {
		return nil
	}
	a.text.WriteString(c.Text)
	p := []byte(c.Text)
	// The advisors come before the calls they vote on.
	if a.adv != nil {
		els, xerr := a.adv.Feed(p)
		if len(els) > 0 {
			a.adv = nil
			if !yield(Event{advisors: els[0].Value}, nil) {
				return errStopped
			}
		} else if xerr != nil {
			a.adv = nil
		}
	}
	if a.x != nil {
		els, xerr := a.x.Feed(p)
		if !emit(i, els, yield) || cfg.ticks && len(els) > 0 && !yield(Event{tick: true}, nil) {
			return errStopped
		}
		if xerr != nil {
			a.x = nil // a syntax error only stops the callbacks
		}
	}
	// The output comes after the calls in a solution, and so in events.
	if o := a.out.feed(i, p); o != nil && !yield(Event{Output: o}, nil) {
		return errStopped
	}
	return nil
}

// emit hands over the elements of solution i.
func emit(i int, els []jsonstream.Element, yield func(Event, error) bool) bool {
	for _, el := range els {
		if !yield(Event{Element: &Element{Index: i, Element: el}}, nil) {
			return false
		}
	}
	return true
}

// repair validates solution i, which ended for the reason finish, and
// re-asks while it is invalid. It returns the solution, or the error that
// ends it with the last answer's *InvalidError: that error itself once
// the repairs are spent, else the error of the repair request that failed.
func repair(ctx context.Context, cfg Config, req *provider.Request, compiled *schema.Schema, checks []func(json.RawMessage) error, i int, text, finish string, resp *Response, yield func(Event, error) bool) (*Solution, *InvalidError, error) {
	limit := cfg.MaxRepairs
	if limit == 0 {
		limit = DefaultMaxRepairs
	}
	msgs := req.Messages
	for attempt := 1; ; attempt++ {
		sol, err := validSolution(text, compiled, checks)
		if err == nil {
			return sol, nil, nil
		}
		if tokenLimit(finish) {
			err = fmt.Errorf("%w (finish reason %q): %w", ErrAnswerCut, finish, err)
		}
		inv := &InvalidError{Index: i, Attempts: attempt, Raw: text, Err: err}
		if attempt > limit {
			return nil, inv, inv
		}
		if !yield(Event{Repair: inv}, nil) {
			return nil, inv, errStopped
		}
		logger(cfg).DebugContext(ctx, "repairing an invalid solution", "index", i, "attempt", attempt, "error", err)
		msgs = append(msgs[:len(msgs):len(msgs)],
			provider.Message{Role: provider.RoleAssistant, Text: text},
			provider.Message{Role: provider.RoleUser, Text: repairPrompt(err)})
		fix := *req
		fix.Messages, fix.N = msgs, 1
		got, err := generate(ctx, repairConfig(cfg), &fix, nil, resp, asSolution(i, yield))
		if err != nil {
			return nil, inv, err
		}
		text, finish = got[0].text, got[0].finish
	}
}

// repairConfig is cfg for a repair's request: what its provider call
// needs, with the Request's logger, budget and warnings, so that a
// repair warns where, and as often as, the request it repairs.
func repairConfig(cfg Config) Config {
	return Config{Provider: cfg.Provider, CallbackPath: cfg.CallbackPath, Logger: cfg.Logger,
		tree: cfg.tree}
}

// asSolution is yield for the events of a repair of solution i: the
// repair asks for one solution, whose events would otherwise say 0.
func asSolution(i int, yield func(Event, error) bool) func(Event, error) bool {
	return func(ev Event, err error) bool {
		switch {
		case ev.Thinking != nil:
			ev.Thinking.Index = i
		case ev.Output != nil:
			ev.Output.Index = i
		case ev.Element != nil:
			ev.Element.Index = i
		case ev.Repair != nil:
			ev.Repair.Index = i
		}
		return yield(ev, err)
	}
}

// tokenLimit reports whether a provider's finish reason says the answer
// reached the output token limit: OpenAI's and Gemini's "length",
// Anthropic's "max_tokens", and Gemini's "continuation" (the per-request
// token limit, the answer paused unfinished).
func tokenLimit(finish string) bool {
	return finish == "length" || finish == "max_tokens" || finish == "continuation"
}

// repairPrompt tells the model what was wrong with its answer. The text is
// part of replay: keep it stable.
func repairPrompt(err error) string {
	if errors.Is(err, ErrAnswerCut) {
		return "Your answer reached the output token limit and was cut off before it ended.\nAnswer again with the whole JSON object, shorter."
	}
	var ve *schema.ValidationError
	if errors.As(err, &ve) {
		return "Your answer does not match the required JSON schema:\n" + ve.Error() + "\nAnswer again with the whole corrected JSON object."
	}
	if errors.Is(err, errInvalidJSON) {
		return "Your answer is not valid JSON: " + err.Error() + "\nAnswer again with only the whole JSON object."
	}
	return "Your answer is not acceptable: " + err.Error() + "\nAnswer again with the whole corrected JSON object."
}

// validSolution validates text against compiled and checks, and splits
// it into a Solution.
func validSolution(text string, compiled *schema.Schema, checks []func(json.RawMessage) error) (*Solution, error) {
	sol, err := parseSolution(text, compiled)
	if err != nil {
		return nil, err
	}
	for _, check := range checks {
		if err := check(sol.Raw); err != nil {
			return nil, err
		}
	}
	return sol, nil
}

// parseSolution validates text and splits it into a Solution whose
// parts share no memory.
func parseSolution(text string, compiled *schema.Schema) (*Solution, error) {
	body, at := answerJSON(text)
	raw := json.RawMessage(body)
	if !json.Valid(raw) {
		var v any
		err := json.Unmarshal(raw, &v)
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			// Where it breaks in the answer as written (a code fence and
			// white space included): the model, or whoever reads Raw,
			// finds it there.
			return nil, fmt.Errorf("%w at byte %d of %d: %w", errInvalidJSON, at+int(se.Offset), len(text), err)
		}
		return nil, fmt.Errorf("%w: %w", errInvalidJSON, err)
	}
	// A strict model writes null for each property it leaves out: Accept
	// takes them out, which would reach the run's output, and the calls
	// the log records and every later request shows the model.
	raw, err := compiled.Accept(raw)
	if err != nil {
		return nil, err
	}
	sol, err := splitSolution(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidJSON, err)
	}
	return sol, nil
}

// splitSolution returns the solution raw with its output and calls
// apart; a null output is none.
func splitSolution(raw json.RawMessage) (*Solution, error) {
	var parts struct {
		Output json.RawMessage   `json:"output"`
		Calls  []json.RawMessage `json:"calls"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, err
	}
	sol := &Solution{Raw: raw, Calls: parts.Calls} // Unmarshal copies each part
	if string(parts.Output) != "null" {
		sol.Output = parts.Output
	}
	return sol, nil
}

// answerJSON returns the JSON of an answer: text without the white space
// around it and the Markdown code fence some models wrap JSON in, and
// the byte of text it starts at.
func answerJSON(text string) (string, int) {
	at := len(text) - len(strings.TrimLeftFunc(text, unicode.IsSpace))
	s := strings.TrimSpace(text)
	rest, fenced := strings.CutPrefix(s, "```")
	if !fenced {
		return s, at
	}
	at += len("```")
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest, at = rest[nl+1:], at+nl+1
	}
	at += len(rest) - len(strings.TrimLeftFunc(rest, unicode.IsSpace))
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```")), at
}

func logger(cfg Config) *slog.Logger {
	if cfg.Logger != nil {
		return cfg.Logger
	}
	return slog.Default()
}
