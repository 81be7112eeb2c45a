package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/telemetry"
)

func ExampleNewWithConfig() {
	// The measurements go to a reader read here; a program gives the
	// MeterProvider of its exporter (OTLP, say), and a TracerProvider too
	// for spans.
	reader := sdkmetric.NewManualReader()
	t, err := telemetry.NewWithConfig(telemetry.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		fmt.Println(err)
		return
	}

	model := scripted.New(
		scripted.Response{Solutions: []string{`{"output":{"answer":42}}`}, Usage: provider.Usage{Input: 20, CacheRead: 80, Output: 6, Thinking: 4}},
	)
	cfg := agent.Config{Provider: model, Model: "demo", Logger: slog.New(slog.DiscardHandler)}
	res, err := t.Run(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), []message.Message{message.Text("The answer?")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("run: %+v\n", res.Usage)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if h, ok := m.Data.(metricdata.Histogram[int64]); ok {
			for _, p := range h.DataPoints {
				typ, _ := p.Attributes.Value(semconv.GenAITokenTypeKey)
				fmt.Printf("%s %s: %d in %d request(s)\n", m.Name, typ.AsString(), p.Sum, p.Count)
			}
		}
	}
	// Unordered output:
	// run: {Input:20 Output:6 Thinking:4 CacheRead:80 CacheWrite:0 CacheWriteLong:0}
	// gen_ai.client.token.usage input: 100 in 1 request(s)
	// gen_ai.client.token.usage output: 10 in 1 request(s)
}
