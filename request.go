package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/augceo/agent/internal/jsonfast"
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
	// N is the number of solutions (multiplexing); 0 means 1.
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

	// MaxSteps bounds the requests of a run; 0 means DefaultMaxSteps.
	MaxSteps int
	// MaxCallsPerStep bounds the calls one solution may make; 0 means
	// DefaultMaxCallsPerStep.
	MaxCallsPerStep int
	// TokenBudget stops the run before a request once usage has reached
	// it; 0 means no budget.
	TokenBudget int
	// Concurrency bounds the calls running at once; 0 means
	// DefaultConcurrency.
	Concurrency int
	// Confirm, when set, sees every call that is ready to run and decides
	// whether it runs (human in the loop). It is called on the run's
	// goroutine, one call at a time.
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
	// RunID names the run in Store; empty means a new id.
	RunID string

	resume *resumed // set by Resume: the journal of the earlier attempt

	// chunkDone, set by a loop, is called after each chunk of the answer
	// that is not its last: calls queued while reading it may start on
	// workers, since the model has more to say.
	chunkDone func()
	// lendElements, set by a loop, says that the consumer reads each
	// Element event during its yield only, and not its Path: the elements
	// are handed over in one variable rather than each in its own, with
	// no paths made.
	lendElements bool
	// quiet, set by Run, says that no one reads EventMessage: the loop
	// appends the outputs of calls to its log without making messages
	// of them.
	quiet bool
}

// registry returns the Registry c names, or DefaultRegistry.
func (c *Config) registry() *Registry {
	if c.Registry == nil {
		return DefaultRegistry
	}
	return c.Registry
}

// Solution is one validated answer of the model.
//
// Raw, Output and Calls may share the memory of the model's answer:
// read them, do not write to them.
type Solution struct {
	// Raw is the whole solution object as the model wrote it.
	Raw json.RawMessage
	// Output is the value of output; nil when the model left it null
	// (in a loop: not done yet).
	Output json.RawMessage
	// Calls are the tool calls the model asked for, in order.
	Calls []json.RawMessage
}

// Done reports whether the solution has an output.
func (s *Solution) Done() bool { return s.Output != nil }

// Field returns another property of the solution (meta, advisors, ...), or
// nil when absent.
func (s *Solution) Field(name string) json.RawMessage {
	if !bytes.Contains(s.Raw, []byte(`"`+name+`"`)) && bytes.IndexByte(s.Raw, '\\') < 0 {
		return nil // no member can have that name: skip the parse
	}
	o, err := ojson.Parse(s.Raw)
	if err != nil {
		return nil
	}
	return o.Get(name)
}

// Response is the result of a Request.
type Response struct {
	Solutions []Solution
	// Usage sums every provider call the request made, repairs included.
	Usage provider.Usage
	// Sent is what the provider was first asked: rendered messages, the
	// composed schema and the settings.
	Sent *provider.Request

	// sent and one are where Sent and the Solutions of a request for one
	// solution live: the three take one allocation.
	sent provider.Request
	one  [1]Solution
}

// Event is one thing that happened during a streamed Request. Exactly
// one field is set.
type Event struct {
	// Thinking continues the model's visible reasoning for a solution.
	Thinking *Text
	// Element is a completed element at Config.CallbackPath.
	Element *Element
	// Repair reports an invalid solution that is being re-asked.
	Repair *InvalidError
	// Response is the final result, the last event.
	Response *Response
}

// Text is a piece of text of one solution.
type Text struct {
	Index int
	Text  string
}

// Element is a completed value at the callback path of solution Index.
type Element struct {
	Index int // the solution
	jsonstream.Element
}

// Request runs one LLM invocation: it renders the context through the
// registry's handlers, composes the output schema around schema, asks the
// provider and validates every solution, re-asking with the errors when
// one is invalid.
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
// elements while the answer arrives, repairs, and finally the Response.
// It is single-use and runs on the caller's goroutine; breaking out of it
// cancels the provider call.
func Stream(ctx context.Context, cfg Config, userSchema json.RawMessage, msgs []message.Message) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if cfg.Provider == nil {
			yield(Event{}, ErrNoProvider)
			return
		}
		p, err := prepare(ctx, cfg, userSchema, msgs)
		if err != nil {
			yield(Event{}, err)
			return
		}
		p.stream(ctx, cfg, yield)
	}
}

// prepared is a request ready to send.
type prepared struct {
	build    *Build
	composed json.RawMessage
	compiled *schema.Schema

	// For a loop, which carries it to the next step (see prepareNext):
	trust   bool            // each call was checked as it streamed in: the final check skips calls
	cached  *composed       // the cache entry composed came from, if any
	trusted *schema.Schema  // the composed schema for trust, once made
	carry   bool            // every message handled so far allows it
	n       int             // the messages handled
	gen     int             // build.gen when composed was made
	user    json.RawMessage // the user's schema
}

// stream sends a prepared request and validates its solutions.
func (p *prepared) stream(ctx context.Context, cfg Config, yield func(Event, error) bool) {
	resp := &Response{sent: *p.build.LLM}
	req := &resp.sent
	req.Messages = p.build.messages
	req.Schema = p.composed
	req.SchemaName = "solution"
	resp.Sent = req
	var one [1]streamed
	sols, err := generate(ctx, cfg, req, resp, yield, one[:0])
	if err != nil {
		if err != errStopped {
			yield(Event{}, err)
		}
		return
	}
	var trusted *schema.Schema
	if p.trust {
		if trusted, err = p.trustedSchema(); err != nil {
			yield(Event{}, err)
			return
		}
	}
	resp.Solutions = resp.one[:0]
	if len(sols) > 1 {
		resp.Solutions = make([]Solution, 0, len(sols))
	}
	for i := range sols {
		resp.Solutions = append(resp.Solutions, Solution{})
		err := repair(ctx, cfg, req, p.compiled, trusted, &sols[i], p.build.solutionChecks, i, resp, &resp.Solutions[i], yield)
		if err != nil {
			if err != errStopped {
				yield(Event{}, err)
			}
			return
		}
	}
	yield(Event{Response: resp}, nil)
}

// errInvalidJSON marks an answer that is not JSON at all.
var errInvalidJSON = errors.New("invalid JSON")

// errStopped means the consumer stopped the stream.
var errStopped = errors.New("agent: stream stopped")

// prepare runs the handlers and composes and compiles the schema.
func prepare(ctx context.Context, cfg Config, userSchema json.RawMessage, msgs []message.Message) (*prepared, error) {
	log, err := message.NewLog(msgs...)
	if err != nil {
		return nil, fmt.Errorf("agent: context: %w", err)
	}
	return prepareLog(ctx, cfg, userSchema, log)
}

// prepareLog runs the handlers over log and composes and compiles the schema.
func prepareLog(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log) (*prepared, error) {
	return prepareBuild(ctx, cfg, userSchema, log, false)
}

// prepareBuild is prepareLog; with toolsOnly, for a caller that only
// needs the tools, nothing is rendered (the handlers run all the same,
// and their errors stand).
func prepareBuild(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log, toolsOnly bool) (*prepared, error) {
	return prepareFrom(ctx, cfg, userSchema, log, toolsOnly, false)
}

// prepareNext prepares the next request of a loop, whose log only grows.
// While every message is of a type whose built-in handler looks at its own
// message only (or, for data, at the merged value of its identity), prev
// is carried on: only the messages appended since are handled, data blocks
// whose identity got new messages are rendered again where they are, and
// the composed schema is kept unless a tool or property changed. The
// result is what preparing the whole log would give.
func prepareNext(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log, prev *prepared) (*prepared, error) {
	if prev == nil {
		return prepareStart(ctx, cfg, userSchema, log)
	}
	if prev.carry {
		if p, ok, err := prev.extend(ctx, log); ok {
			return p, err
		}
	}
	return prepareFrom(ctx, cfg, userSchema, log, false, true)
}

// scratchMessages hold a message for a handler while it runs: handlers
// do not keep it, and a step's few new messages should not each move a
// 392-byte Message to the heap.
var scratchMessages = sync.Pool{New: func() any { return new(message.Message) }}

// carries reports whether the handler of typ is a built-in one that a
// loop can run on new messages only: not the advisor's, which looks at
// the whole log.
func (r *Registry) carries(typ message.Type) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.builtin[typ] && typ != message.TypeAdvisor
}

// extend handles the messages appended to log since p was prepared; ok is
// false, with p unchanged, when one of them does not allow it.
func (p *prepared) extend(ctx context.Context, log *message.Log) (_ *prepared, ok bool, err error) {
	b := p.build
	var buf [16]message.TypedIdentity // the usual step's messages
	ids := log.IdentitiesFrom(buf[:0], p.n)
	n := p.n + len(ids)
	// The new messages are mostly outputs, of one type and identity: each
	// loop below asks about a type or an identity only when it changes.
	var typ message.Type
	for i, ti := range ids {
		if i == 0 || ti.Type != typ {
			if typ = ti.Type; !b.Registry.carries(typ) {
				return nil, false, nil
			}
		}
	}
	// Data blocks rendered already show the merged value of all messages
	// of their identity: render those that got new ones again.
	var dirty []message.Identity
	var last message.Identity
	for _, ti := range ids {
		typ, id := ti.Type, ti.Identity
		if typ != message.TypeData || len(dirty) > 0 && id == last {
			continue
		}
		if _, ok := b.shown.blockOf(id); ok && !slices.Contains(dirty, id) {
			dirty = append(dirty, id)
			last = id
		}
	}
	if len(dirty) > 0 {
		slices.SortFunc(dirty, func(x, y message.Identity) int {
			bx, _ := b.shown.blockOf(x)
			by, _ := b.shown.blockOf(y)
			return bx.index - by.index
		})
		b.messages = slices.Clone(b.messages) // the last request holds the old ones
		for _, id := range dirty {
			bl, _ := b.shown.blockOf(id)
			text, err := b.dataBlock(id)
			if err != nil {
				return nil, true, &MessageError{Index: bl.index, Type: string(message.TypeData), Err: err}
			}
			b.messages[bl.msg].Text = text
		}
	}
	var shown message.Identity // the last identity found rendered, if any
	var some bool
	for i := p.n; i < n; i++ {
		if typ, id := ids[i-p.n].Type, ids[i-p.n].Identity; typ == message.TypeData && (some && id == shown || b.shown.has(id)) {
			// The built-in handler (every message here has one) shows an
			// identity once, where it first appears: nothing to do, and
			// no need to copy the message out of the log.
			shown, some = id, true
			continue
		}
		m := scratchMessages.Get().(*message.Message)
		*m = log.At(i)
		err := b.handle(ctx, i, m)
		*m = message.Message{}
		scratchMessages.Put(m)
		if err != nil {
			return nil, true, err
		}
	}
	p.n = n
	if b.gen != p.gen {
		if err := p.compose(); err != nil {
			return nil, true, err
		}
	}
	return p, true, nil
}

// handle runs the handler of m, message i of the log.
func (b *Build) handle(ctx context.Context, i int, m *message.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h, err := b.Registry.handler(m.Type)
	if err == nil {
		b.Index = i
		err = h.Handle(ctx, b, m)
	}
	if err != nil {
		return &MessageError{Index: i, Type: string(m.Type), Err: err}
	}
	return nil
}

// compose composes and compiles the schema of p's build. A loop's
// request (carry) looks in the registry's cache of recent ones first:
// runs of one agent start with the same tools.
func (p *prepared) compose() error {
	b, reg := p.build, p.build.Registry
	p.gen, p.cached, p.trusted = b.gen, nil, nil
	var key *composeKey
	if p.carry {
		key = &composeKey{user: p.user, propKeys: b.props.Keys, props: b.props.Values, required: b.required, tools: b.tools.Values}
		if e := reg.composedFor(key); e != nil {
			p.composed, p.compiled, p.cached = e.composed, e.compiled, e
			return nil
		}
	}
	composed, err := b.compose(p.user, false)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	compiled, err := reg.compile(composed)
	if err != nil {
		return fmt.Errorf("agent: composed schema: %w", err)
	}
	p.composed, p.compiled = composed, compiled
	if key != nil {
		p.cached = reg.keepComposed(key, composed, compiled)
	}
	return nil
}

// prepareFrom prepares a request from the whole log; with carry, the
// result may be carried on by prepareNext.
func prepareFrom(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log, toolsOnly, carry bool) (*prepared, error) {
	return prepareUpTo(ctx, cfg, userSchema, log, log.Len(), toolsOnly, carry)
}

// prepareUpTo is prepareFrom for the first n messages of log.
func prepareUpTo(ctx context.Context, cfg Config, userSchema json.RawMessage, log *message.Log, n int, toolsOnly, carry bool) (*prepared, error) {
	reg := cfg.registry()
	llm := llmSettings(cfg)
	b := &Build{
		Log:       log,
		Registry:  reg,
		LLM:       &llm,
		toolsOnly: toolsOnly,
		carry:     carry,
	}
	p := &prepared{build: b, carry: carry, user: userSchema}
	var m message.Message // one variable for all: handlers do not keep it
	for i := range n {
		m = log.At(i)
		if err := b.handle(ctx, i, &m); err != nil {
			return nil, err
		}
		p.carry = p.carry && reg.carries(m.Type)
		p.n = i + 1
	}
	if err := p.compose(); err != nil {
		return nil, err
	}
	return p, nil
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
	}
}

// streamed is a solution as generate received it.
type streamed struct {
	text    string
	path    string            // the callback path
	emitted int               // the elements handed over
	calls   []json.RawMessage // their values, in order
	span    jsonstream.Span   // where the array at path lies in text,
	spanned bool              // when there was exactly one
}

// generate runs one provider call, streaming thinking and callback
// elements, and returns each solution, appended to out.
func generate(ctx context.Context, cfg Config, req *provider.Request, resp *Response, yield func(Event, error) bool, out []streamed) ([]streamed, error) {
	// The provider's stream is read by g.take, a function made once for
	// each generation, which sync.Pool keeps for the next request, where
	// a loop body would be a closure made at every request. A provider
	// must not call it once its iterator has returned, as iter.Seq2
	// requires (a range loop would panic): g may serve another request.
	g := generations.Get().(*generation)
	take := g.takeFn
	if take == nil {
		take = g.take
	}
	*g = generation{path: cfg.CallbackPath, yield: yield, req: req, resp: resp, lend: cfg.lendElements,
		chunkDone: cfg.chunkDone, takeFn: take}
	defer func() {
		*g = generation{takeFn: take}
		generations.Put(g)
	}()
	cfg.Provider.Generate(ctx, req)(take)
	if g.err != nil {
		return nil, g.err
	}
	if len(g.sols) == 0 {
		return nil, fmt.Errorf("agent: provider: empty answer")
	}
	out = slices.Grow(out[:0], len(g.sols))[:len(g.sols)]
	for i := range g.sols {
		st := &g.sols[i]
		x := st.x
		if x != nil {
			els, err := x.End()
			if !g.emit(i, els, err) {
				return nil, errStopped
			}
		}
		out[i] = streamed{text: st.text(), path: g.path, emitted: st.emitted, calls: st.calls}
		if st.x != nil { // no syntax error
			if sp := st.x.Spans(); len(sp) == 1 { // the extractor's: copied
				out[i].span, out[i].spanned = sp[0], true
			}
			extractors.Put(st.x) // what it handed over stays as it is
			st.x = nil
		}
	}
	return out, nil
}

// chunk takes one chunk of the provider's stream.
func (g *generation) chunk(c *provider.Chunk, err error) error {
	if err != nil {
		return fmt.Errorf("agent: provider: %w", err)
	}
	if c.Index < 0 || c.Index >= max(g.req.N, 1) {
		return fmt.Errorf("agent: provider: chunk for solution %d of %d", c.Index, g.req.N)
	}
	if err := g.grow(c.Index); err != nil {
		return err
	}
	if c.Usage != nil {
		g.resp.Usage.Add(*c.Usage)
	}
	if c.Thinking != "" && !g.yield(Event{Thinking: &Text{Index: c.Index, Text: c.Thinking}}, nil) {
		return errStopped
	}
	if c.Text == "" {
		return nil
	}
	g.sols[c.Index].write(c.Text)
	if x := g.sols[c.Index].x; x != nil {
		// A string's bytes never change: the chunk is read in place, and
		// the calls whole in it share its bytes rather than copy them.
		buf := elementBufs.Get().(*[]jsonstream.Element)
		els, err := x.AppendShared((*buf)[:0], unsafe.Slice(unsafe.StringData(c.Text), len(c.Text)))
		ok := g.emit(c.Index, els, err) // copies the elements: buf is free again
		clear(els)
		*buf = els[:0]
		elementBufs.Put(buf)
		if !ok {
			return errStopped
		}
	}
	return nil
}

// generations keep the state of finished provider calls for the next.
var generations = sync.Pool{New: func() any { return new(generation) }}

// extractors keep the extractors of finished requests, with the room
// their scanners grew, for the next.
var extractors = sync.Pool{New: func() any { return new(jsonstream.Extractor) }}

// elementBufs holds buffers for the elements of a chunk: an answer that
// comes in one chunk hands over all its calls at once.
var elementBufs = sync.Pool{New: func() any {
	b := make([]jsonstream.Element, 0, 16)
	return &b
}}

// generation is the state of generate: the solutions as they arrive.
type generation struct {
	path  string // the callback path
	yield func(Event, error) bool
	req   *provider.Request
	resp  *Response
	sols  []solutionText
	one   [1]solutionText // the first solution's, so that one solution allocates nothing more
	err   error
	lend  bool    // see Config.lendElements
	lent  Element // the element handed over, when lent

	chunkDone func()                            // see Config.chunkDone
	ended     bool                              // take returned false
	takeFn    func(*provider.Chunk, error) bool // take, made once
}

// take reads one item of the provider's stream, as the body of a range
// over it would; it reports whether to go on. Past a false, it ignores
// what a faulty provider still yields.
func (g *generation) take(c *provider.Chunk, err error) bool {
	if g.ended {
		return false
	}
	if g.err = g.chunk(c, err); g.err != nil {
		g.ended = true
		return false
	}
	if g.chunkDone != nil && !c.Done {
		g.chunkDone()
	}
	return true
}

// solutionText is the text of one solution so far, with its extractor of
// callback elements (nil without a callback path, or after a syntax
// error).
type solutionText struct {
	first   string // the text while it is one chunk: a whole answer is not copied
	b       *strings.Builder
	x       *jsonstream.Extractor
	emitted int
	calls   []json.RawMessage // the values of the elements handed over
}

func (s *solutionText) write(t string) {
	switch {
	case s.b != nil:
		s.b.WriteString(t)
	case s.first == "":
		s.first = t
	default:
		s.b = &strings.Builder{}
		s.b.Grow(2 * (len(s.first) + len(t)))
		s.b.WriteString(s.first)
		s.b.WriteString(t)
	}
}

func (s *solutionText) text() string {
	if s.b != nil {
		return s.b.String()
	}
	return s.first
}

// grow makes room for solution i.
func (g *generation) grow(i int) error {
	if g.sols == nil {
		g.sols = g.one[:0]
	}
	for len(g.sols) <= i {
		var x *jsonstream.Extractor
		if g.path != "" {
			x = extractors.Get().(*jsonstream.Extractor)
			if err := x.Reset(g.path); err != nil {
				return fmt.Errorf("agent: callback path: %w", err)
			}
			if g.lend {
				x.SkipPaths() // the loop reads an element's Index and Value only
			}
		}
		g.sols = append(g.sols, solutionText{x: x})
	}
	return nil
}

// emit hands over elements; a syntax error only stops the callbacks,
// since validation reports it properly and repairs the solution.
func (g *generation) emit(i int, els []jsonstream.Element, err error) bool {
	if len(els) > 0 {
		var batch []Element // one allocation for the chunk's elements, unless lent
		if !g.lend {
			batch = make([]Element, len(els))
		}
		st := &g.sols[i]
		if st.calls == nil {
			st.calls = make([]json.RawMessage, 0, max(len(els), 8))
		}
		for k, el := range els {
			e := &g.lent
			if batch != nil {
				e = &batch[k]
			}
			*e = Element{Index: i, Element: el}
			st.emitted++
			st.calls = append(st.calls, el.Value)
			if !g.yield(Event{Element: e}, nil) {
				return false
			}
		}
		g.lent = Element{} // keep nothing of the chunk
	}
	if err != nil {
		g.sols[i].x = nil
	}
	return true
}

// repair validates solution i, into *dst, and re-asks while it is
// invalid. When trusted is set and every call of the solution was handed
// over as an element (emitted), the calls were checked one by one already
// and the solution is validated against trusted.
func repair(ctx context.Context, cfg Config, req *provider.Request, compiled, trusted *schema.Schema, st *streamed, checks []func(json.RawMessage) error, i int, resp *Response, dst *Solution, yield func(Event, error) bool) error {
	text, emitted := st.text, st.emitted
	limit := cfg.MaxRepairs
	if limit == 0 {
		limit = DefaultMaxRepairs
	}
	msgs := req.Messages
	for attempt := 1; ; attempt++ {
		var sol *Solution
		var err error
		if trusted != nil && attempt == 1 {
			if parseTrusted(st, trusted, dst) {
				sol = dst
			} else if sol, err = parseSolution(text, trusted, emitted); err != nil || len(sol.Calls) != emitted {
				sol = nil
			}
		}
		if sol == nil {
			sol, err = parseSolution(text, compiled, emitted)
		}
		if err == nil {
			for _, check := range checks {
				if err = check(sol.Raw); err != nil {
					break
				}
			}
		}
		if err == nil {
			*dst = *sol
			return nil
		}
		inv := &InvalidError{Index: i, Attempts: attempt, Raw: text, Err: err}
		if attempt > limit {
			return inv
		}
		if !yield(Event{Repair: inv}, nil) {
			return errStopped
		}
		logger(cfg).DebugContext(ctx, "repairing an invalid solution", "index", i, "attempt", attempt, "error", err)
		msgs = append(msgs[:len(msgs):len(msgs)],
			provider.Message{Role: provider.RoleAssistant, Text: text},
			provider.Message{Role: provider.RoleUser, Text: repairPrompt(err)})
		fix := *req
		fix.Messages, fix.N = msgs, 1
		sols, err := generate(ctx, Config{Provider: cfg.Provider}, &fix, resp, yield, nil)
		if err != nil {
			return err
		}
		text = sols[0].text
	}
}

// repairPrompt tells the model what was wrong with its answer. The text is
// part of replay: keep it stable.
func repairPrompt(err error) string {
	var ve *schema.ValidationError
	if errors.As(err, &ve) {
		return "Your answer does not match the required JSON schema:\n" + ve.Error() + "\nAnswer again with the whole corrected JSON object."
	}
	if errors.Is(err, errInvalidJSON) {
		return "Your answer is not valid JSON: " + err.Error() + "\nAnswer again with only the whole JSON object."
	}
	return "Your answer is not acceptable: " + err.Error() + "\nAnswer again with the whole corrected JSON object."
}

// parseSolution validates text and splits it into a Solution; calls is
// how many calls it likely has.
func parseSolution(text string, compiled *schema.Schema, calls int) (*Solution, error) {
	raw := json.RawMessage(strings.TrimSpace(stripFence(text)))
	// A valid solution is valid JSON: check the syntax only for an
	// invalid one, to report it first.
	if err := compiled.Validate(raw); err != nil {
		if !json.Valid(raw) {
			var v any
			err := json.Unmarshal(raw, &v)
			return nil, fmt.Errorf("%w: %w", errInvalidJSON, err)
		}
		return nil, err
	}
	sol := &Solution{Raw: raw}
	jsonfast.Members(raw, func(k string, v []byte) bool {
		switch k {
		case "output":
			if string(v) != "null" {
				sol.Output = v
			}
		case "calls":
			sol.Calls = nil
			if len(v) > 0 && v[0] == '[' {
				sol.Calls = make([]json.RawMessage, 0, max(calls, 1))
				jsonfast.Elements(v, func(c []byte) bool {
					sol.Calls = append(sol.Calls, c)
					return true
				})
			}
		}
		return true
	})
	return sol, nil
}

// noCalls is the calls of a solution that has none: empty, not nil, as
// parseSolution makes them.
var noCalls = []json.RawMessage{}

// parseTrusted validates a solution of a loop without its calls, which
// were checked one by one as they streamed in: the calls array is cut
// out of the text and what is left is checked against trusted, the
// composed schema whose calls are any objects. It returns nil when it
// cannot tell (the array was not seen once whole, a call is not an
// object, the text is fenced) or the rest is invalid: parseSolution
// then checks the whole text and reports the error. It reads the
// solution into *sol, and reports whether it did.
func parseTrusted(st *streamed, trusted *schema.Schema, sol *Solution) bool {
	if st.path != "calls" || !st.spanned || st.span.End < 0 || len(st.calls) != st.emitted {
		return false
	}
	for _, c := range st.calls {
		if c[0] != '{' { // elements are valid JSON, without white space around
			return false
		}
	}
	raw := strings.TrimSpace(st.text)
	if stripFence(raw) != raw {
		return false
	}
	lead := int64(len(st.text) - len(strings.TrimLeft(st.text, " \t\r\n")))
	start, end := st.span.Start-lead, st.span.End-lead
	if start < 0 || end > int64(len(raw)) {
		return false
	}
	bp := cuts.Get().(*[]byte)
	defer cuts.Put(bp)
	cut := append(append(append((*bp)[:0], raw[:start]...), "[]"...), raw[end:]...)
	*bp = cut
	if trusted.Validate(cut) != nil {
		return false
	}
	// The text never changes, and the calls share it already.
	text := unsafe.Slice(unsafe.StringData(raw), len(raw))
	*sol = Solution{Raw: text, Calls: st.calls}
	if sol.Calls == nil {
		sol.Calls = noCalls
	}
	jsonfast.RawMembers(cut, func(k, v []byte) bool {
		isOutput := string(k) == `"output"` || bytes.IndexByte(k, '\\') >= 0 && jsonfast.Unquote(k) == "output"
		if isOutput && string(v) != "null" { // as parseSolution reads it
			// The same bytes in the text, which outlives cut: they come
			// before the calls, or after them, shifted by the calls cut out.
			at := int(uintptr(unsafe.Pointer(unsafe.SliceData(v))) - uintptr(unsafe.Pointer(unsafe.SliceData(cut))))
			if at >= int(start) {
				at += int(end-start) - 2
			}
			sol.Output = text[at : at+len(v) : at+len(v)]
		}
		return true
	})
	return true
}

// cuts holds the buffers parseTrusted cuts solutions into.
var cuts = sync.Pool{New: func() any { return new([]byte) }}

// stripFence removes a Markdown code fence some models wrap JSON in.
func stripFence(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") {
		return s
	}
	t = strings.TrimPrefix(t, "```")
	if nl := strings.IndexByte(t, '\n'); nl >= 0 {
		t = t[nl+1:]
	}
	return strings.TrimSuffix(strings.TrimSpace(t), "```")
}

func logger(cfg Config) *slog.Logger {
	if cfg.Logger != nil {
		return cfg.Logger
	}
	return slog.Default()
}
