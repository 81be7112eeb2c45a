package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/telemetry"
)

func ExampleTracer_Events() {
	// The spans go to a recorder here; a program gives the TracerProvider
	// of its exporter (OTLP, say).
	rec := tracetest.NewSpanRecorder()
	t := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))

	reg := agent.NewRegistry()
	reg.Tool("add", json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`))
	reg.Activity("add", agent.Bind(func(ctx context.Context, p struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}) (float64, error) {
		return p.A + p.B, nil
	}))
	model := scripted.Solutions(
		`{"calls":[{"_tool":"add","a":40,"b":2,"_outputPath":"†state.sum"}],"output":null}`,
		`{"calls":[],"output":{"sum":42}}`,
	)
	cfg := agent.Config{Provider: model, Registry: reg, Model: "demo", Logger: slog.New(slog.DiscardHandler)}
	msgs := []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`"add"`)}, message.Text("Add 40 and 2.")}

	for ev, err := range t.Events(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), msgs) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Kind == agent.EventDone {
			fmt.Println(string(ev.Result.Solution.Output))
		}
	}

	// Print the spans as a tree.
	spans := rec.Ended()
	slices.SortFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	var show func(parent trace.SpanID, indent string)
	show = func(parent trace.SpanID, indent string) {
		for _, s := range spans {
			if s.Parent().SpanID() == parent {
				fmt.Println(indent + s.Name())
				show(s.SpanContext().SpanID(), indent+"  ")
			}
		}
	}
	show(trace.SpanID{}, "")
	// Output:
	// {"sum":42}
	// invoke_agent
	//   step
	//     chat demo
	//     execute_tool add
	//   step
	//     chat demo
}
