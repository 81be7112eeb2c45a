// Package telemetry traces agent runs with OpenTelemetry, following the
// GenAI semantic conventions (gen_ai.* attributes, semconv v1.41.0),
// measures their requests with the conventions' client metrics, and logs
// a record per step with log/slog.
//
// It is off unless a trace.TracerProvider or a metric.MeterProvider is
// given (the global ones are never used): the root package imports
// nothing of OpenTelemetry, and a program that does not import this
// package does not compile it. A [Tracer] wraps the entry points of the
// root package:
//
//	t := telemetry.New(tp) // tp: an sdktrace.TracerProvider, say
//	for ev, err := range t.Events(ctx, cfg, schema, msgs) {
//		...
//	}
//
// [Tracer.Run], [Tracer.Resume], [Tracer.Continue], [Tracer.ExecutePlan]
// and [Tracer.ExecutePlanInstances], and their streams, do the same for
// the functions of the root package of those names, and [Tracer.Provider]
// traces the requests of any provider, for agent.Request and friends. The
// events and results are those of the root package, unchanged.
//
// # Spans
//
// A run is a span "invoke_agent" (gen_ai.operation.name invoke_agent),
// a child of the span in the context given. Each step is a span "step",
// a child of the run. Each call is a span "execute_tool {tool}"
// (gen_ai.operation.name execute_tool), a child of its step, from its
// start to the moment the run took its result. Each request to the model
// is a span "chat {model}" (gen_ai.operation.name chat; for Gemini,
// "generate_content {model}", as the conventions name its API): the step's own
// request is a child of the step; a latent call's, a delegate's and
// whatever else a call's code asks are children of the call, as are the
// spans that code starts from its context (which holds the call's span,
// through platform.WithCallHook). A call that fails gets the status
// Error, as does a request, a step or a run that fails.
//
// # Metrics
//
// A Tracer made by [NewWithConfig] with a MeterProvider measures each
// request once, when its stream ends (a request for N solutions, or one
// retried by a provider.Retry, is one request, as it is one span):
//
//	t, err := telemetry.NewWithConfig(telemetry.Config{TracerProvider: tp, MeterProvider: mp})
//
// gen_ai.client.token.usage ({token}) records its input and output tokens
// (gen_ai.token.type input, output), counted as the spans count them:
// input with the cached tokens, output with the reasoning.
// gen_ai.client.operation.duration (s) records its duration, measured
// with the context's clock (the Config's Clock in a run), with error.type
// when it failed, gen_ai.client.operation.time_to_first_chunk (s) the
// time to the first chunk of a streamed request, and
// gen_ai.client.operation.time_per_output_chunk (s) the time from each
// chunk after it to the chunk before. All use the bucket
// boundaries the conventions recommend, and the attributes
// gen_ai.operation.name (chat), gen_ai.provider.name, server.address and
// server.port (from the provider's Endpoint), gen_ai.request.model (the
// provider's default, from its Endpoint, when the request names none)
// and gen_ai.response.model (the model that answered, when the provider
// said): nothing that grows with the runs. The conventions define no
// metric for prompt caching; the spans carry the cached tokens. With a
// MeterProvider alone, a Tracer measures requests and neither traces nor
// logs; without one, it spends nothing on metrics.
//
// # Logs
//
// At the end of each step a record "step" goes to the Config's Logger
// (slog.Default() when nil) at level Info, with the step's number, model,
// token usage (its request's and its calls'), calls, failed calls and
// duration, in the context of the step's span. A Tracer made with a
// no-op TracerProvider logs without tracing.
package telemetry
