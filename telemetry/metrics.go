package telemetry

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/augceo/agent/provider"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
)

// The explicit bucket boundaries the GenAI conventions recommend for
// gen_ai.client.token.usage ({token}), and for
// gen_ai.client.operation.duration,
// gen_ai.client.operation.time_to_first_chunk and
// gen_ai.client.operation.time_per_output_chunk (s).
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// metrics are the instruments of a Tracer that measures requests.
type metrics struct {
	tokens   genaiconv.ClientTokenUsage
	duration genaiconv.ClientOperationDuration
	first    genaiconv.ClientOperationTimeToFirstChunk
	chunk    genaiconv.ClientOperationTimePerOutputChunk
}

// newMetrics makes the instruments with a meter of mp.
func newMetrics(mp metric.MeterProvider) (*metrics, error) {
	meter := mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	tokens, err := genaiconv.NewClientTokenUsage(meter, metric.WithExplicitBucketBoundaries(tokenBuckets...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", tokens.Name(), err)
	}
	duration, err := genaiconv.NewClientOperationDuration(meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", duration.Name(), err)
	}
	first, err := genaiconv.NewClientOperationTimeToFirstChunk(meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", first.Name(), err)
	}
	chunk, err := genaiconv.NewClientOperationTimePerOutputChunk(meter, metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s: %w", chunk.Name(), err)
	}
	return &metrics{tokens: tokens, duration: duration, first: first, chunk: chunk}, nil
}

// measured is what a request's measurements record.
type measured struct {
	usage    *provider.Usage // nil: the provider reported none
	duration time.Duration
	first    *time.Duration  // to the first chunk of a stream; nil: not streamed, or no chunk came
	gaps     []time.Duration // from each chunk of a stream after the first to the chunk before it
	failed   error           // what ended the stream, if anything
}

// record records a request's values with the attributes attrs that say
// what it asked, where, and which model answered: its usage if counted,
// its duration, with the error.type of failed when not nil, the time to
// its first chunk and the time per chunk after it, which the conventions
// measure for streams only. A request's values are recorded once,
// however many solutions it asked for or retries it made; the time per
// chunk once per chunk, at the end too, when the model that answered is
// known.
func (m *metrics) record(ctx context.Context, attrs []attribute.KeyValue, v measured) {
	set := func(more ...attribute.KeyValue) attribute.Set { return attribute.NewSet(slices.Concat(attrs, more)...) }
	if v.usage != nil {
		in, out := tokens(*v.usage)
		m.tokens.RecordSet(ctx, int64(in), set(semconv.GenAITokenTypeInput))
		m.tokens.RecordSet(ctx, int64(out), set(semconv.GenAITokenTypeOutput))
	}
	if v.first != nil || len(v.gaps) > 0 {
		plain := set()
		if v.first != nil {
			m.first.RecordSet(ctx, v.first.Seconds(), plain)
		}
		for _, gap := range v.gaps {
			m.chunk.RecordSet(ctx, gap.Seconds(), plain)
		}
	}
	if v.failed != nil {
		m.duration.RecordSet(ctx, v.duration.Seconds(), set(semconv.ErrorTypeKey.String(errorType(v.failed))))
		return
	}
	m.duration.RecordSet(ctx, v.duration.Seconds(), set())
}

// metricAttrs returns the attributes of a request's measurements: the
// operation, the provider and its server, and the model asked for (the
// provider's default when the request names none). Nothing that varies
// from run to run: no ids, arguments or error texts.
// They begin the attributes of its span too (requestAttrs): more is the
// room left after them for the span's own.
func (p *traced) metricAttrs(req *provider.Request, more int) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 3+len(p.endpoint)+more)
	attrs = append(attrs, p.op)
	attrs = append(attrs, p.endpoint...)
	if model := p.requested(req); model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(model))
	}
	return attrs
}
