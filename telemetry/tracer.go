package telemetry

import (
	"context"
	"encoding/json"
	"iter"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// ScopeName is the instrumentation scope of the spans and the instruments
// a Tracer makes.
const ScopeName = "github.com/augceo/agent/telemetry"

// Tracer traces runs and requests, and measures requests. A Tracer made
// by New(nil), like a nil *Tracer, is off: its methods call the root
// package's and record nothing. A Tracer is safe for concurrent use, by
// any number of runs.
type Tracer struct {
	tracer  trace.Tracer // nil: runs and requests are not traced
	metrics *metrics     // nil: requests are not measured
}

// Config says where a Tracer's spans and measurements go. The zero Config
// records nothing; the global providers (otel.GetTracerProvider,
// otel.GetMeterProvider) are never used unless given.
type Config struct {
	// TracerProvider makes the spans of runs and requests, and turns the
	// step logs on. Nil: no spans, nor step logs.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments that measure requests:
	// gen_ai.client.token.usage, gen_ai.client.operation.duration,
	// gen_ai.client.operation.time_to_first_chunk and
	// gen_ai.client.operation.time_per_output_chunk. Nil: no metrics, and
	// nothing spent on them.
	MeterProvider metric.MeterProvider
}

// New returns a Tracer whose spans tp makes, and which records no
// metrics. A nil tp turns tracing off; the global provider
// (otel.GetTracerProvider) is never used unless given. New(tp) is
// NewWithConfig(Config{TracerProvider: tp}).
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		return &Tracer{}
	}
	return &Tracer{tracer: tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))}
}

// NewWithConfig returns a Tracer that traces with cfg.TracerProvider and
// measures requests with cfg.MeterProvider. Either may be nil: with only
// a MeterProvider, the Tracer measures the requests of runs and of
// [Tracer.Provider], and neither traces nor logs steps. The error is the
// MeterProvider's, when it cannot make an instrument.
func NewWithConfig(cfg Config) (*Tracer, error) {
	t := New(cfg.TracerProvider)
	if cfg.MeterProvider != nil {
		m, err := newMetrics(cfg.MeterProvider)
		if err != nil {
			return nil, err
		}
		t.metrics = m
	}
	return t, nil
}

// on reports whether t traces runs.
func (t *Tracer) on() bool { return t != nil && t.tracer != nil }

// nameRun gives a durable run that has no id the one its store would
// have made up (platform.NewID), now: its requests' spans then say their
// conversation from the start, where the id was known only at the end.
func (t *Tracer) nameRun(ctx context.Context, cfg *agent.Config) {
	if t.on() && cfg.Store != nil && cfg.RunID == "" {
		cfg.RunID = platform.NewID(ctx)
	}
}

// Events is agent.Events, traced: a span for the run, its steps, their
// requests and their calls, and a log record at the end of each step.
// cfg.Provider is traced (see Provider) unless it is already. The stream
// yields what agent.Events yields; like it, it is single-use.
func (t *Tracer) Events(ctx context.Context, cfg agent.Config, schema json.RawMessage, msgs []message.Message) iter.Seq2[agent.RunEvent, error] {
	t.nameRun(ctx, &cfg)
	return t.events(ctx, cfg, cfg.RunID, func(ctx context.Context, cfg agent.Config) iter.Seq2[agent.RunEvent, error] {
		return agent.Events(ctx, cfg, schema, msgs)
	})
}

// Run is agent.Run, traced as Events is.
func (t *Tracer) Run(ctx context.Context, cfg agent.Config, schema json.RawMessage, msgs []message.Message) (*agent.RunResult, error) {
	return agent.Collect(t.Events(ctx, cfg, schema, msgs))
}

// ResumeEvents is agent.ResumeEvents, traced as Events is: the run span
// covers this attempt, from the step it resumes at.
func (t *Tracer) ResumeEvents(ctx context.Context, cfg agent.Config, id string) iter.Seq2[agent.RunEvent, error] {
	return t.events(ctx, cfg, id, func(ctx context.Context, cfg agent.Config) iter.Seq2[agent.RunEvent, error] {
		return agent.ResumeEvents(ctx, cfg, id)
	})
}

// Resume is agent.Resume, traced as Events is.
func (t *Tracer) Resume(ctx context.Context, cfg agent.Config, id string) (*agent.RunResult, error) {
	return agent.Collect(t.ResumeEvents(ctx, cfg, id))
}

// ContinueEvents is agent.ContinueEvents, traced as Events is: the run
// span covers this turn.
func (t *Tracer) ContinueEvents(ctx context.Context, cfg agent.Config, id string, msgs ...message.Message) iter.Seq2[agent.RunEvent, error] {
	return t.events(ctx, cfg, id, func(ctx context.Context, cfg agent.Config) iter.Seq2[agent.RunEvent, error] {
		return agent.ContinueEvents(ctx, cfg, id, msgs...)
	})
}

// Continue is agent.Continue, traced as Events is.
func (t *Tracer) Continue(ctx context.Context, cfg agent.Config, id string, msgs ...message.Message) (*agent.RunResult, error) {
	return agent.Collect(t.ContinueEvents(ctx, cfg, id, msgs...))
}

// PlanEvents is agent.PlanEvents, traced as Events is: a plan has no
// steps, so its calls are children of the run span.
func (t *Tracer) PlanEvents(ctx context.Context, cfg agent.Config, plan []json.RawMessage, msgs []message.Message) iter.Seq2[agent.RunEvent, error] {
	t.nameRun(ctx, &cfg)
	return t.events(ctx, cfg, cfg.RunID, func(ctx context.Context, cfg agent.Config) iter.Seq2[agent.RunEvent, error] {
		return agent.PlanEvents(ctx, cfg, plan, msgs)
	})
}

// ExecutePlan is agent.ExecutePlan, traced as PlanEvents is.
func (t *Tracer) ExecutePlan(ctx context.Context, cfg agent.Config, plan []json.RawMessage, msgs []message.Message) (*agent.RunResult, error) {
	return agent.Collect(t.PlanEvents(ctx, cfg, plan, msgs))
}

// PlanInstancesEvents is agent.PlanInstancesEvents, traced as PlanEvents
// is.
func (t *Tracer) PlanInstancesEvents(ctx context.Context, cfg agent.Config, plan []json.RawMessage, msgs []message.Message) iter.Seq2[agent.RunEvent, error] {
	t.nameRun(ctx, &cfg)
	return t.events(ctx, cfg, cfg.RunID, func(ctx context.Context, cfg agent.Config) iter.Seq2[agent.RunEvent, error] {
		return agent.PlanInstancesEvents(ctx, cfg, plan, msgs)
	})
}

// ExecutePlanInstances is agent.ExecutePlanInstances, traced as
// PlanEvents is.
func (t *Tracer) ExecutePlanInstances(ctx context.Context, cfg agent.Config, plan []json.RawMessage, msgs []message.Message) (*agent.RunResult, error) {
	return agent.Collect(t.PlanInstancesEvents(ctx, cfg, plan, msgs))
}
