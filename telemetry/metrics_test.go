package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/telemetry"
)

// measuring returns a Tracer whose spans go to the recorder and whose
// measurements go to the reader returned.
func measuring(t *testing.T) (*telemetry.Tracer, *tracetest.SpanRecorder, *sdkmetric.ManualReader) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	tr, err := telemetry.NewWithConfig(telemetry.Config{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr, rec, reader
}

// point is a data point of a histogram, for comparing.
type point struct {
	Name  string
	Attrs string // key=value, sorted by key
	Count uint64
	Sum   float64
}

// bounded are the attributes a measurement may have: none that grows
// with the runs (ids, arguments, error texts).
var bounded = []string{"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model",
	"server.address", "server.port", "error.type", "gen_ai.token.type"}

// points collects what reader holds: the data points of the package's
// histograms, sorted. It fails t on an attribute that is not bounded.
func points(t *testing.T, reader *sdkmetric.ManualReader) []point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var out []point
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != telemetry.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			add := func(attrs []string, count uint64, sum float64) {
				out = append(out, point{m.Name, strings.Join(attrs, " "), count, sum})
			}
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					add(renderAttrs(t, p.Attributes.ToSlice()), p.Count, float64(p.Sum))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					add(renderAttrs(t, p.Attributes.ToSlice()), p.Count, p.Sum)
				}
			default:
				t.Errorf("%s: %T, want a histogram", m.Name, m.Data)
			}
		}
	}
	slices.SortFunc(out, func(a, b point) int { return strings.Compare(a.Name+" "+a.Attrs, b.Name+" "+b.Attrs) })
	return out
}

// renderAttrs writes attributes as key=value, checking that they are bounded.
func renderAttrs(t *testing.T, kvs []attribute.KeyValue) []string {
	t.Helper()
	var out []string
	for _, kv := range kvs {
		if !slices.Contains(bounded, string(kv.Key)) {
			t.Errorf("a measurement has the attribute %s = %s", kv.Key, kv.Value.String())
		}
		out = append(out, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
	}
	return out
}

// onAnthropic are the attributes of the measurements of a request to
// anthropic, for claude-test.
const onAnthropic = "gen_ai.operation.name=chat gen_ai.provider.name=anthropic gen_ai.request.model=claude-test server.address=api.anthropic.com server.port=443"

// with returns attrs, as points renders them, with more.
func with(attrs string, more ...string) string {
	all := append(strings.Fields(attrs), more...)
	slices.Sort(all)
	return strings.Join(all, " ")
}

// spanTokens adds up the usage of the request spans.
func spanTokens(spans []sdktrace.ReadOnlySpan) (in, out float64) {
	for _, s := range spans {
		if strings.HasPrefix(s.Name(), "chat") {
			u := usageOf(s)
			in += float64(u[0])
			out += float64(u[1])
		}
	}
	return in, out
}

func TestMetricsRun(t *testing.T) {
	// A run of two steps whose first calls a tool and a latent tool: three
	// requests, each measured once. The sums are the run's usage counted
	// as the conventions count: cached tokens in the input, reasoning in
	// the output; and they are what the request spans say. The steps'
	// requests stream, so their first chunks are timed; the latent
	// call's does not.
	tr, rec, reader := measuring(t)
	reg := agent.NewRegistry()
	reg.Tool("lookup", json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`))
	reg.Activity("lookup", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) { return agent.Value("Ada") }))
	reg.Tool("guess", json.RawMessage(`{"type":"object","properties":{"_output":{"type":"integer"}}}`))
	model := scripted.New(
		scripted.Response{Solutions: []string{`{"calls":[{"_tool":"lookup","id":"c1","_outputPath":"†state.name"},{"_tool":"guess","_outputPath":"†state.n"}],"output":null}`},
			Usage: provider.Usage{Input: 100, Output: 20, Thinking: 5, CacheRead: 50, CacheWrite: 10}},
		scripted.Response{Solutions: []string{`{"output":7}`}, Usage: provider.Usage{Input: 42, Output: 1, CacheRead: 8}},
		scripted.Response{Solutions: []string{`{"calls":[],"output":{"done":true}}`}, Usage: provider.Usage{Input: 10, Output: 5}},
	)
	cfg := agent.Config{Provider: described{model, anthropic}, Registry: reg, Model: "claude-test", Clock: fixed, Logger: slog.New(slog.DiscardHandler)}
	res, err := tr.Run(context.Background(), cfg, anyOutput, append(tools("lookup", "guess"), message.Text("go")))
	if err != nil {
		t.Fatal(err)
	}
	u := res.Usage
	in, out := float64(u.Input+u.CacheRead+u.CacheWrite), float64(u.Output+u.Thinking)
	want := []point{
		{"gen_ai.client.operation.duration", onAnthropic, 3, 0}, // the Config's Clock stands still
		{"gen_ai.client.operation.time_to_first_chunk", onAnthropic, 2, 0},
		{"gen_ai.client.token.usage", with(onAnthropic, "gen_ai.token.type=input"), 3, in},
		{"gen_ai.client.token.usage", with(onAnthropic, "gen_ai.token.type=output"), 3, out},
	}
	if d := cmp.Diff(points(t, reader), want); d != "" {
		t.Errorf("measurements (-got +want):\n%s", d)
	}
	if in != 220 || out != 31 {
		t.Errorf("the run used %+v", u)
	}
	if sin, sout := spanTokens(rec.Ended()); sin != in || sout != out {
		t.Errorf("the request spans count %v input, %v output tokens; the measurements %v, %v", sin, sout, in, out)
	}
}

func TestMetricsRequest(t *testing.T) {
	// A request for three solutions that a Retry makes twice is one
	// request, measured once, as it is one span.
	tr, rec, reader := measuring(t)
	inner := described{scripted.New(
		scripted.Response{Err: &provider.Error{Provider: "anthropic", Status: 529, Err: errors.New("overloaded")}},
		scripted.Response{Solutions: []string{`{"output":1}`, `{"output":2}`, `{"output":3}`}, Usage: provider.Usage{Input: 30, Output: 3, Thinking: 2, CacheRead: 60}},
	), anthropic}
	retry := provider.Retry(inner, provider.RetryConfig{Sleep: func(context.Context, time.Duration) error { return nil }})
	cfg := agent.Config{Provider: tr.Provider(retry), Model: "claude-test", N: 3}
	resp, err := agent.Request(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("pick")})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Solutions) != 3 {
		t.Fatalf("%d solutions", len(resp.Solutions))
	}
	got := points(t, reader)
	got[0].Sum = 0 // the wall clock's
	want := []point{
		{"gen_ai.client.operation.duration", onAnthropic, 1, 0},
		{"gen_ai.client.token.usage", with(onAnthropic, "gen_ai.token.type=input"), 1, 90},
		{"gen_ai.client.token.usage", with(onAnthropic, "gen_ai.token.type=output"), 1, 5},
	}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("measurements (-got +want):\n%s", d)
	}
	if n := len(find(rec.Ended(), "chat claude-test")); n != 1 {
		t.Errorf("%d request spans", n)
	}
}

func TestMetricsRequestFails(t *testing.T) {
	// A failed request: its duration, with the error's type and not its
	// text; no usage, as the provider reported none.
	for _, tt := range []struct {
		name     string
		err      error
		wantType string
	}{
		{"provider error", &provider.Error{Provider: "anthropic", Status: 529, Err: errors.New("overloaded")}, "529"},
		{"other error", errors.New("connection reset by 10.1.2.3"), "_OTHER"},
		{"timeout", &provider.TimeoutError{Provider: "anthropic", Phase: provider.PhaseFirstByte, After: time.Minute}, "timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, _, reader := measuring(t)
			cfg, msgs := twoSteps()
			cfg.Provider = described{scripted.New(scripted.Response{Err: tt.err}), anthropic}
			if _, err := tr.Run(context.Background(), cfg, anyOutput, msgs); err == nil {
				t.Fatal("the run did not fail")
			}
			want := []point{{"gen_ai.client.operation.duration", with(onAnthropic, "error.type="+tt.wantType), 1, 0}}
			if d := cmp.Diff(points(t, reader), want); d != "" {
				t.Errorf("measurements (-got +want):\n%s", d)
			}
		})
	}
}

func TestMetricsDuration(t *testing.T) {
	// A request's duration, and the time to its stream's first chunk, are
	// measured with the context's clock (the Config's, in a run), and fall
	// in the conventions' buckets. A provider with no Endpoint has
	// no provider or server attributes, and a request with no model no
	// gen_ai.request.model.
	tr, _, reader := measuring(t)
	now := fixed()
	ctx := platform.WithClock(context.Background(), func() time.Time { return now })
	slow := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		now = now.Add(1500 * time.Millisecond)
		return scripted.Solutions(`1`).Generate(ctx, req)
	})
	for _, err := range tr.Provider(slow).Generate(ctx, &provider.Request{Stream: true}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if n := len(rm.ScopeMetrics[0].Metrics); n != 3 {
		t.Errorf("%d instruments", n)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			p := d.DataPoints[0]
			if m.Unit != "s" || p.Sum != 1.5 {
				t.Errorf("%s: %v %s", m.Name, p.Sum, m.Unit)
			}
			if want := []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}; !slices.Equal(p.Bounds, want) {
				t.Errorf("%s: bounds %v, want %v", m.Name, p.Bounds, want)
			}
			if p.BucketCounts[8] != 1 {
				t.Errorf("%s: buckets %v, want 1.5 in (1.28, 2.56]", m.Name, p.BucketCounts)
			}
			if got := renderAttrs(t, p.Attributes.ToSlice()); !slices.Equal(got, []string{"gen_ai.operation.name=chat"}) {
				t.Errorf("%s: attributes %v", m.Name, got)
			}
		case metricdata.Histogram[int64]:
			if p := d.DataPoints[0]; m.Unit != "{token}" || !slices.Equal(p.Bounds, []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}) {
				t.Errorf("%s: unit %s, bounds %v", m.Name, m.Unit, p.Bounds)
			}
		}
	}
}

func TestMetricsOnly(t *testing.T) {
	// A MeterProvider and no TracerProvider: requests are measured, and
	// nothing is traced or logged, not even through the global provider.
	// A Tracer with no MeterProvider measures nothing, not even through
	// the global one.
	spans := tracetest.NewSpanRecorder()
	globalTP := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	defer otel.SetTracerProvider(globalTP)
	global := sdkmetric.NewManualReader()
	globalMP := otel.GetMeterProvider()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(global)))
	defer otel.SetMeterProvider(globalMP)

	reader := sdkmetric.NewManualReader()
	tr, err := telemetry.NewWithConfig(telemetry.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg, msgs := twoSteps()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	res, err := tr.Run(context.Background(), cfg, anyOutput, msgs)
	if err != nil {
		t.Fatal(err)
	}
	u := res.Usage
	want := []point{
		{"gen_ai.client.operation.duration", onAnthropic, 2, 0},
		{"gen_ai.client.operation.time_to_first_chunk", onAnthropic, 2, 0},
		{"gen_ai.client.token.usage", with(onAnthropic, "gen_ai.token.type=input"), 2, float64(u.Input + u.CacheRead + u.CacheWrite)},
		{"gen_ai.client.token.usage", with(onAnthropic, "gen_ai.token.type=output"), 2, float64(u.Output + u.Thinking)},
	}
	if d := cmp.Diff(points(t, reader), want); d != "" {
		t.Errorf("measurements (-got +want):\n%s", d)
	}
	if n := len(spans.Started()); n != 0 {
		t.Errorf("%d spans", n)
	}
	if logs.Len() != 0 {
		t.Errorf("logs:\n%s", logs.String())
	}

	traced, _ := recording()
	cfg, msgs = twoSteps()
	if _, err := traced.Run(context.Background(), cfg, anyOutput, msgs); err != nil {
		t.Fatal(err)
	}
	if got := points(t, global); len(got) != 0 {
		t.Errorf("measured through the global provider: %v", got)
	}
	off, err := telemetry.NewWithConfig(telemetry.Config{})
	if p := scripted.New(); err != nil || off.Provider(p) != provider.Provider(p) {
		t.Errorf("a Tracer with no providers wrapped the provider (%v)", err)
	}
}
