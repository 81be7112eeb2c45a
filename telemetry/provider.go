package telemetry

import (
	"context"
	"iter"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Provider returns p traced: each Generate is a span "chat {model}"
// ("generate_content {model}" for Gemini, as the conventions name it). Its
// parent is the open step of the traced run its context belongs to (see
// Events), else the run, else the span in its context. The span holds the
// request's settings and model (the adapter's default, from its
// Endpoint, when the request names none), the model that answered and
// the id of its response, the finish reason of each solution ("error"
// for one a failure cut, none for one the consumer stopped reading
// before its end), the usage, the time to the first chunk of a stream,
// and an error that ends the stream; a consumer that stops reading is no
// error. When t measures requests, each Generate also records its usage,
// duration, time to the first chunk and time per chunk after it (see the
// package's Metrics). The result is a provider.Describer with p's
// Endpoint when p is one, so that durable runs save where their requests
// go. A Tracer that is off returns p, as it does a p traced already.
// Generate may be called concurrently, as p's may.
func (t *Tracer) Provider(p provider.Provider) provider.Provider {
	if t == nil || t.tracer == nil && t.metrics == nil || p == nil {
		return p
	}
	switch p.(type) {
	case *traced, described:
		return p
	}
	tp := &traced{t: t, tracer: t.tracer, inner: p, op: semconv.GenAIOperationNameChat}
	if tp.tracer == nil { // measured only
		tp.tracer = noop.NewTracerProvider().Tracer(ScopeName)
	}
	if d, ok := p.(provider.Describer); ok {
		e := d.Endpoint()
		tp.endpoint, tp.model, tp.op = endpointAttrs(e), e.Model, operation(e.Provider)
		return described{tp, d}
	}
	return tp
}

// traced is a Provider whose requests are spans.
type traced struct {
	t        *Tracer
	tracer   trace.Tracer // t's, or a no-op one when t only measures
	inner    provider.Provider
	endpoint []attribute.KeyValue // of the provider, when it says
	model    string               // of a request that names none, when the provider says
	op       attribute.KeyValue   // gen_ai.operation.name, which names the span too
}

// described is a traced Describer.
type described struct {
	*traced
	d provider.Describer
}

var (
	_ provider.Provider  = (*traced)(nil)
	_ provider.Describer = described{}
)

// Endpoint returns the Endpoint of the Provider traced.
func (p described) Endpoint() provider.Endpoint { return p.d.Endpoint() }

// Generate asks the traced Provider, in a span.
func (p *traced) Generate(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
	return func(yield func(*provider.Chunk, error) bool) {
		model := p.requested(req)
		parent, conv := ctx, ""
		if r := stateOf(ctx); r != nil {
			parent, conv = r.request(ctx, model)
		}
		ctx, span := p.tracer.Start(parent, spanName(p.op.Value.AsString(), model), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(p.requestAttrs(req, conv)...))
		defer span.End()
		// The clock is read only for what is recorded: the duration and
		// each chunk of a stream when measuring, the first chunk of a
		// stream for the span too.
		var start time.Time
		if p.t.metrics != nil || req.Stream {
			start = platform.Now(ctx)
		}
		n := max(req.N, 1)
		var (
			reasons  []string // of the solutions that came; "" until done
			done     []bool
			usage    provider.Usage
			counted  bool
			answered string          // the model the response named
			id       string          // the response's id, when the provider said it
			first    time.Duration   // from the request to the first chunk of a stream
			chunked  bool            // whether a chunk came
			last     time.Time       // when the chunk before came, in a stream measured
			gaps     []time.Duration // from each chunk after the first to the one before
			failed   error
			stopped  bool
		)
		// A plain function rather than a range loop: a faulty provider
		// that yields again after being stopped is ignored, as the agent
		// ignores it, not a panic.
		p.inner.Generate(ctx, req)(func(c *provider.Chunk, err error) bool {
			if stopped {
				return false
			}
			if err != nil {
				failed, stopped = err, true
				yield(nil, err)
				return false
			}
			if c != nil {
				// A chunk that only says a failed stream's usage is no
				// piece of the answer.
				if req.Stream && !c.UsageOnly() && (!chunked || p.t.metrics != nil) {
					now := platform.Now(ctx)
					if !chunked {
						first = now.Sub(start)
					} else {
						gaps = append(gaps, now.Sub(last))
					}
					last = now
				}
				chunked = chunked || !c.UsageOnly()
				if c.Model != "" {
					answered = c.Model
				}
				if c.ResponseID != "" {
					id = c.ResponseID
				}
				if c.Index >= 0 && c.Index < n && !c.UsageOnly() {
					for len(reasons) <= c.Index {
						reasons, done = append(reasons, ""), append(done, false)
					}
					if c.Done {
						reasons[c.Index], done[c.Index] = c.FinishReason, true
					}
				}
				if c.Usage != nil {
					usage.Add(*c.Usage)
					counted = true
				}
			}
			if !yield(c, nil) {
				stopped = true
				return false
			}
			return true
		})
		if reasons := finishReasons(reasons, done, n, failed != nil, stopped && failed == nil); len(reasons) > 0 {
			span.SetAttributes(semconv.GenAIResponseFinishReasons(reasons...))
		}
		if answered != "" {
			span.SetAttributes(semconv.GenAIResponseModel(answered))
		}
		if id != "" {
			span.SetAttributes(semconv.GenAIResponseID(id))
		}
		streamed := req.Stream && chunked
		if streamed {
			span.SetAttributes(semconv.GenAIResponseTimeToFirstChunk(first.Seconds()))
		}
		if counted {
			span.SetAttributes(usageAttrs(usage)...)
		}
		if failed != nil {
			setError(span, failed)
		}
		if m := p.t.metrics; m != nil {
			rec := measured{duration: platform.Now(ctx).Sub(start), failed: failed, gaps: gaps}
			if counted {
				rec.usage = &usage
			}
			if streamed {
				rec.first = &first
			}
			attrs := p.metricAttrs(req, 1)
			if answered != "" {
				attrs = append(attrs, semconv.GenAIResponseModel(answered))
			}
			m.record(ctx, attrs, rec)
		}
	}
}

// finishReasons returns the gen_ai.response.finish_reasons of a request
// for n solutions, given the reasons of those that came and whether each
// finished. A stream that failed owes all n, and a solution it cut has
// "error", as the conventions ask, rather than no reason. One the
// consumer left (stopped reading) did not fail: the reasons are those of
// the solutions received to their end, as the conventions list those of
// the generations received; the others were not, and the model did not
// stop them. One that ended well has those the provider sent.
func finishReasons(reasons []string, done []bool, n int, failed, left bool) []string {
	if left {
		var got []string
		for i, r := range reasons {
			if done[i] {
				got = append(got, r)
			}
		}
		return got
	}
	for failed && len(reasons) < n {
		reasons, done = append(reasons, ""), append(done, false)
	}
	for i := range reasons {
		if !done[i] {
			reasons[i] = "error"
		}
	}
	return reasons
}

// requested returns the model req asks for: its own, else the
// provider's default, when it says.
func (p *traced) requested(req *provider.Request) string {
	if req.Model != "" {
		return req.Model
	}
	return p.model
}

// requestAttrs returns the attributes of a request's span, of the
// conversation conv when not empty.
func (p *traced) requestAttrs(req *provider.Request, conv string) []attribute.KeyValue {
	attrs := p.metricAttrs(req, 6) // then the request's settings
	if conv != "" {
		attrs = append(attrs, semconv.GenAIConversationID(conv))
	}
	// The conventions ask for the output type when the request asks for
	// a format: a schema. Free text asks for none.
	if req.Schema != nil {
		attrs = append(attrs, semconv.GenAIOutputTypeJSON)
	}
	if req.Stream { // the conventions: set if and only if streaming
		attrs = append(attrs, semconv.GenAIRequestStream(true))
	}
	if req.N > 1 {
		attrs = append(attrs, semconv.GenAIRequestChoiceCount(req.N))
	}
	if req.Temperature != nil {
		attrs = append(attrs, semconv.GenAIRequestTemperature(*req.Temperature))
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	return attrs
}
