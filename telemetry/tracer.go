package telemetry

import (
	"context"
	"encoding/json"
	"iter"

	"go.opentelemetry.io/otel/trace"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// ScopeName is the instrumentation scope of the spans a Tracer makes.
const ScopeName = "github.com/augceo/agent/telemetry"

// Tracer traces runs and requests. A Tracer made by New(nil), like a nil
// *Tracer, is off: its methods call the root package's and record
// nothing. A Tracer is safe for concurrent use, by any number of runs.
type Tracer struct {
	tracer trace.Tracer // nil: off
}

// New returns a Tracer whose spans tp makes. A nil tp turns tracing off;
// the global provider (otel.GetTracerProvider) is never used unless
// given.
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		return &Tracer{}
	}
	return &Tracer{tracer: tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))}
}

// on reports whether t traces.
func (t *Tracer) on() bool { return t != nil && t.tracer != nil }

// Events is agent.Events, traced: a span for the run, its steps, their
// requests and their calls, and a log record at the end of each step.
// cfg.Provider is traced (see Provider) unless it is already. The stream
// yields what agent.Events yields; like it, it is single-use.
func (t *Tracer) Events(ctx context.Context, cfg agent.Config, schema json.RawMessage, msgs []message.Message) iter.Seq2[agent.RunEvent, error] {
	if !t.on() {
		return agent.Events(ctx, cfg, schema, msgs)
	}
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
	if !t.on() {
		return agent.ResumeEvents(ctx, cfg, id)
	}
	return t.events(ctx, cfg, id, func(ctx context.Context, cfg agent.Config) iter.Seq2[agent.RunEvent, error] {
		return agent.ResumeEvents(ctx, cfg, id)
	})
}

// Resume is agent.Resume, traced as Events is.
func (t *Tracer) Resume(ctx context.Context, cfg agent.Config, id string) (*agent.RunResult, error) {
	return agent.Collect(t.ResumeEvents(ctx, cfg, id))
}
