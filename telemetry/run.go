package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/augceo/agent"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Attributes of this package's own, outside the GenAI conventions.
const (
	stepKey         = attribute.Key("acts.step")              // a step's number, from 1
	stepCallsKey    = attribute.Key("acts.step.calls")        // the calls of a step that started or failed
	stepFailedKey   = attribute.Key("acts.step.failed_calls") // those that failed
	runStepsKey     = attribute.Key("acts.run.steps")         // the steps of a run
	callInstanceKey = attribute.Key("acts.call.instance")     // a call's _instance
	compactionKey   = attribute.Key("acts.compaction")        // what a compaction did
)

// stateKey is the context key of the run a context belongs to.
type stateKey struct{}

// stateOf returns the traced run ctx belongs to, or nil.
func stateOf(ctx context.Context) *runState {
	r, _ := ctx.Value(stateKey{}).(*runState)
	return r
}

// runState is a traced run. Its events come in on the consumer's
// goroutine, which alone touches it, but for step and calls: requests
// read them from the goroutines of calls.
type runState struct {
	t      *Tracer
	span   trace.Span
	ctx    context.Context // the run's: its span, and the run on it
	clock  context.Context // its Now is the Config's Clock
	logger *slog.Logger
	model  string              // the Config's
	id     string              // the run's, when known upfront: the conversation of its requests
	outer  *platform.CallScope // the call the run runs for, if any: its own calls' Outer
	usage  provider.Usage      // of the requests of this attempt: its EventUsage

	mu    sync.Mutex
	step  *stepState            // the open step; written under mu
	calls map[string]*callState // by call ID: started and not ended; written under mu
	asked string                // the model of the run's first request of its own; under mu
}

// stepState is an open step.
type stepState struct {
	n      int
	span   trace.Span
	ctx    context.Context
	start  time.Time
	usage  provider.Usage
	calls  int
	failed int
	err    error
	model  string // the model of its first request; under runState.mu
}

// callState is a call that started.
type callState struct {
	span trace.Span
	step *stepState // nil: a call outside any step (a plan's, a resumed step's)
}

// events traces the events start returns for the run's context and
// configuration. id is the run's id, when known upfront. A Tracer that
// does not trace runs returns start's events as they are, its Provider
// measured if t measures requests.
func (t *Tracer) events(ctx context.Context, cfg agent.Config, id string, start func(context.Context, agent.Config) iter.Seq2[agent.RunEvent, error]) iter.Seq2[agent.RunEvent, error] {
	if !t.on() {
		cfg.Provider = t.Provider(cfg.Provider)
		return start(ctx, cfg)
	}
	return func(yield func(agent.RunEvent, error) bool) {
		cfg.Provider = t.Provider(cfg.Provider)
		parent := ctx
		if outer := stateOf(ctx); outer != nil { // a run inside a call of a traced run
			parent = outer.current(ctx)
		}
		attrs := []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent}
		if d, ok := cfg.Provider.(provider.Describer); ok {
			if name := providerName(d.Endpoint().Provider); name != "" {
				attrs = append(attrs, semconv.GenAIProviderNameKey.String(name))
			}
		}
		if cfg.Model != "" {
			attrs = append(attrs, semconv.GenAIRequestModel(cfg.Model))
		}
		if id != "" {
			attrs = append(attrs, semconv.GenAIConversationID(id))
		}
		r := &runState{t: t, clock: platform.WithClock(ctx, cfg.Clock), logger: cfg.Logger, model: cfg.Model, id: id, outer: platform.CallOf(ctx), calls: map[string]*callState{}}
		if r.logger == nil {
			r.logger = slog.Default()
		}
		ctx, r.span = t.tracer.Start(parent, "invoke_agent", trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		r.ctx = platform.WithCallHook(context.WithValue(ctx, stateKey{}, r), r.callContext)
		defer r.close()
		for ev, err := range start(r.ctx, cfg) {
			r.observe(ev, err)
			if !yield(ev, err) {
				return
			}
		}
	}
}

// current returns ctx with the span that what happens now in the run
// belongs to: the call ctx runs for, else the open step's, else the
// run's.
func (r *runState) current(ctx context.Context) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cs := r.callOf(ctx); cs != nil {
		return trace.ContextWithSpan(ctx, cs.span)
	}
	if r.step != nil {
		return trace.ContextWithSpan(ctx, r.step.span)
	}
	return trace.ContextWithSpan(ctx, r.span)
}

// callOf returns the open call of the run that ctx runs for, or nil; r.mu
// is held. A call of a run nested in it (a delegate's, a run an activity
// starts) runs for that call too: what it does goes under the call.
func (r *runState) callOf(ctx context.Context) *callState {
	for s := platform.CallOf(ctx); s != nil; s = s.Outer() {
		if s.Outer() == r.outer {
			return r.calls[s.ID()]
		}
	}
	return nil
}

// callContext is the run's platform.CallHook: a call's code runs with
// the call's span, so that the spans it starts are the call's children.
func (r *runState) callContext(ctx context.Context) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cs := r.callOf(ctx); cs != nil {
		return trace.ContextWithSpan(ctx, cs.span)
	}
	return ctx
}

// request returns ctx with the parent of a request for model: the call
// ctx runs for (a latent call's, a delegate's), else the open step, which
// takes the model of its first request, else the run. The run takes the
// model of its first request that is not a call's. conv is the
// request's conversation: the run's id, when known upfront.
func (r *runState) request(ctx context.Context, model string) (parent context.Context, conv string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cs := r.callOf(ctx); cs != nil {
		return trace.ContextWithSpan(ctx, cs.span), r.id
	}
	if r.asked == "" {
		r.asked = model
	}
	if s := r.step; s != nil {
		if s.model == "" {
			s.model = model
		}
		return trace.ContextWithSpan(ctx, s.span), r.id
	}
	return trace.ContextWithSpan(ctx, r.span), r.id
}

// observe takes an event of the run before the consumer sees it.
func (r *runState) observe(ev agent.RunEvent, err error) {
	if err != nil {
		r.fail(err)
		return
	}
	switch ev.Kind {
	case agent.EventStep:
		r.endStep()
		r.startStep(ev.Step)
	case agent.EventUsage:
		if ev.Usage != nil {
			r.usage.Add(*ev.Usage)
		}
		s := r.step
		if cs := r.calls[callID(ev.Call)]; cs != nil {
			s = cs.step
		}
		if s != nil && ev.Usage != nil {
			s.usage.Add(*ev.Usage)
		}
	case agent.EventCallStarted:
		cs := r.startCall(ev.Call)
		r.mu.Lock()
		r.calls[callID(ev.Call)] = cs
		r.mu.Unlock()
	case agent.EventCallFinished, agent.EventCallFailed:
		r.endCall(ev.Call, ev.Err)
	case agent.EventCompacted:
		if s := r.step; s != nil {
			s.span.AddEvent("compacted", trace.WithAttributes(compactionKey.String(ev.Text)))
		}
	case agent.EventDone:
		r.endStep()
		r.ended(ev.Result)
	}
}

// startStep opens step n.
func (r *runState) startStep(n int) {
	s := &stepState{n: n, start: platform.Now(r.clock)}
	s.ctx, s.span = r.t.tracer.Start(r.ctx, "step", trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(stepKey.Int(n)))
	r.mu.Lock()
	r.step = s
	r.mu.Unlock()
}

// endStep closes the open step, if any, and logs it.
func (r *runState) endStep() {
	s := r.step
	if s == nil {
		return
	}
	r.mu.Lock()
	r.step = nil
	model := s.model
	r.mu.Unlock()
	if model == "" {
		model = r.model
	}
	s.span.SetAttributes(stepCallsKey.Int(s.calls), stepFailedKey.Int(s.failed))
	s.span.End()
	u := s.usage
	tokens := []any{"input", u.Input, "output", u.Output, "thinking", u.Thinking, "cache_read", u.CacheRead, "cache_write", u.CacheWrite}
	if u.CacheWriteLong > 0 { // only runs that ask for a long cache retention have them
		tokens = append(tokens, "cache_write_long", u.CacheWriteLong)
	}
	attrs := []slog.Attr{
		slog.Int("step", s.n),
		slog.String("model", model),
		slog.Group("tokens", tokens...),
		slog.Int("calls", s.calls),
		slog.Int("failed", s.failed),
		slog.Duration("duration", platform.Now(r.clock).Sub(s.start)),
	}
	if s.err != nil {
		attrs = append(attrs, slog.String("error", errorText(s.err)))
	}
	r.logger.LogAttrs(s.ctx, slog.LevelInfo, "step", attrs...)
}

// startCall opens the span of c, in the open step.
func (r *runState) startCall(c *agent.Call) *callState {
	cs := &callState{step: r.step}
	parent := r.ctx
	if cs.step != nil {
		parent = cs.step.ctx
		cs.step.calls++
	}
	// Every tool runs in the program, as the conventions' "function"
	// does: the model only writes the call.
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(c.Tool), semconv.GenAIToolType("function")}
	var def struct {
		Description string `json:"description"`
	}
	if json.Unmarshal(c.Schema, &def) == nil && def.Description != "" {
		attrs = append(attrs, semconv.GenAIToolDescription(def.Description))
	}
	if c.ID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(c.ID))
	}
	if c.Instance != "" {
		attrs = append(attrs, callInstanceKey.String(c.Instance))
	}
	_, cs.span = r.t.tracer.Start(parent, spanName("execute_tool", c.Tool), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return cs
}

// callID keys a call's span: each event hands over its own copy of the
// call. A call that failed before it started has no ID, nor a span.
func callID(c *agent.Call) string {
	if c == nil {
		return ""
	}
	return c.ID
}

// endCall closes the span of c, with err when it failed. A call that
// failed before it started gets a span of no length.
func (r *runState) endCall(c *agent.Call, err error) {
	if c == nil {
		return
	}
	cs, ok := r.calls[callID(c)]
	if !ok {
		cs = r.startCall(c)
	}
	r.mu.Lock()
	delete(r.calls, callID(c))
	r.mu.Unlock()
	if err != nil {
		setError(cs.span, err)
		if cs.step != nil {
			cs.step.failed++
		}
	}
	cs.span.End()
}

// fail records the error that ended the run.
func (r *runState) fail(err error) {
	if s := r.step; s != nil {
		s.err = err
		setError(s.span, err)
	}
	setError(r.span, err)
	if le, ok := errors.AsType[*agent.LimitError](err); ok {
		r.ended(le.Result)
	}
}

// ended records the run's result on its span. Its usage is not the
// result's, which counts the attempts and turns before this one too.
func (r *runState) ended(res *agent.RunResult) {
	if res == nil {
		return
	}
	r.span.SetAttributes(runStepsKey.Int(res.Steps))
	if res.RunID != "" {
		r.span.SetAttributes(semconv.GenAIConversationID(res.RunID))
	}
}

// close ends what is still open when the stream ends: calls abandoned
// when the consumer stopped, the last step, the run, which gets the
// usage of the requests made until then, and the model they asked for
// when the Config names none: the provider's default, or on a resume the
// model the run saved, which only its requests tell.
func (r *runState) close() {
	r.mu.Lock()
	for c, cs := range r.calls {
		cs.span.End()
		delete(r.calls, c)
	}
	asked := r.asked
	r.mu.Unlock()
	if r.model == "" && asked != "" {
		r.span.SetAttributes(semconv.GenAIRequestModel(asked))
	}
	r.endStep()
	r.span.SetAttributes(usageAttrs(r.usage)...)
	r.span.End()
}

// spanName returns op followed by what it acts on, when known.
func spanName(op, what string) string {
	if what == "" {
		return op
	}
	return op + " " + what
}
