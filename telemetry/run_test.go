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
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/telemetry"
)

var fixed = func() time.Time { return time.Date(2025, 10, 26, 12, 0, 0, 0, time.UTC) }

// recording returns a Tracer whose spans go to the recorder returned.
func recording() (*telemetry.Tracer, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	return telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))), rec
}

// described is a Provider that says its Endpoint.
type described struct {
	provider.Provider
	e provider.Endpoint
}

func (d described) Endpoint() provider.Endpoint { return d.e }

var anthropic = provider.Endpoint{Provider: "anthropic", BaseURL: "https://api.anthropic.com/v1"}

// tree renders spans as an indented tree of names, children in order of
// their step or call id, then of their start.
func tree(spans []sdktrace.ReadOnlySpan) string {
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent().SpanID(); ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	order := func(ss []sdktrace.ReadOnlySpan) {
		slices.SortStableFunc(ss, func(a, b sdktrace.ReadOnlySpan) int {
			if c := strings.Compare(sortKey(a), sortKey(b)); c != 0 {
				return c
			}
			return a.StartTime().Compare(b.StartTime())
		})
	}
	var b strings.Builder
	var walk func(ss []sdktrace.ReadOnlySpan, depth int)
	walk = func(ss []sdktrace.ReadOnlySpan, depth int) {
		order(ss)
		for _, s := range ss {
			fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.Name())
			if s.Status().Code == codes.Error {
				b.WriteString(" (error)")
			}
			b.WriteByte('\n')
			walk(children[s.SpanContext().SpanID()], depth+1)
		}
	}
	walk(roots, 0)
	return b.String()
}

// sortKey orders sibling spans: steps by number, then requests, then
// calls by id.
func sortKey(s sdktrace.ReadOnlySpan) string {
	a := attrs(s)
	switch {
	case a["acts.step"] != nil:
		return fmt.Sprintf("step %03d", a["acts.step"])
	case a["gen_ai.tool.call.id"] != nil:
		return "tool " + a["gen_ai.tool.call.id"].(string)
	}
	return "chat"
}

// attrs returns the attributes of s by key.
func attrs(s sdktrace.ReadOnlySpan) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// checkAttrs compares the attributes of s that want names.
func checkAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]any) {
	t.Helper()
	got := map[string]any{}
	all := attrs(s)
	for k := range want {
		if v, ok := all[k]; ok {
			got[k] = v
		}
	}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("%s: attributes (-got +want):\n%s", s.Name(), d)
	}
}

// find returns the spans named name, in order of start.
func find(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b sdktrace.ReadOnlySpan) int { return strings.Compare(sortKey(a), sortKey(b)) })
	return out
}

func parentOf(s sdktrace.ReadOnlySpan) trace.SpanID { return s.Parent().SpanID() }
func idOf(s sdktrace.ReadOnlySpan) trace.SpanID     { return s.SpanContext().SpanID() }

func tools(names ...string) []message.Message {
	var msgs []message.Message
	for _, n := range names {
		msgs = append(msgs, message.Message{Type: message.TypeTool, Tool: json.RawMessage(`"` + n + `"`)})
	}
	return msgs
}

var anyOutput = json.RawMessage(`{"type":"object"}`)

// twoSteps is a run of two steps whose first calls lookup, which works,
// and charge, which fails.
func twoSteps() (agent.Config, []message.Message) {
	reg := agent.NewRegistry()
	reg.Tool("lookup", json.RawMessage(`{"type":"object","description":"Looks a customer up.","properties":{"id":{"type":"string"}}}`))
	reg.Tool("charge", json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number"}}}`))
	reg.Activity("lookup", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`{"name":"Ada"}`)}, nil
	}))
	reg.Activity("charge", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return nil, errors.New("card declined")
	}))
	model := scripted.New(
		scripted.Response{Solutions: []string{`{"calls":[{"_tool":"lookup","id":"c1","_outputPath":"†state.customer"},
			{"_tool":"charge","amount":5,"_outputPath":"†state.receipt"}],"output":null}`},
			Usage: provider.Usage{Input: 100, Output: 20, Thinking: 5, CacheRead: 50, CacheWrite: 10, CacheWriteLong: 4}},
		scripted.Response{Solutions: []string{`{"calls":[],"output":{"done":true}}`}, Usage: provider.Usage{Input: 10, Output: 5}},
	)
	cfg := agent.Config{Provider: described{model, anthropic}, Registry: reg, Model: "claude-test", Clock: fixed,
		Logger: slog.New(slog.DiscardHandler)}
	return cfg, append(tools("lookup", "charge"), message.Text("charge the customer"))
}

func TestRunSpans(t *testing.T) {
	tr, rec := recording()
	cfg, msgs := twoSteps()
	res, err := tr.Run(context.Background(), cfg, anyOutput, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 2 {
		t.Fatalf("steps = %d", res.Steps)
	}
	spans := rec.Ended()
	want := `invoke_agent
  step
    chat claude-test
    execute_tool lookup
    execute_tool charge (error)
  step
    chat claude-test
`
	if got := tree(spans); got != want {
		t.Fatalf("spans:\n%s\nwant:\n%s", got, want)
	}
	run := find(spans, "invoke_agent")[0]
	checkAttrs(t, run, map[string]any{
		"gen_ai.operation.name":                    "invoke_agent",
		"gen_ai.provider.name":                     "anthropic",
		"gen_ai.request.model":                     "claude-test",
		"gen_ai.usage.input_tokens":                int64(170),
		"gen_ai.usage.output_tokens":               int64(30),
		"gen_ai.usage.cache_read.input_tokens":     int64(50),
		"gen_ai.usage.cache_creation.input_tokens": int64(10),
		"gen_ai.usage.reasoning.output_tokens":     int64(5),
		"acts.run.steps":                           int64(2),
	})
	if run.Status().Code != codes.Unset {
		t.Errorf("run status %v", run.Status())
	}
	steps := find(spans, "step")
	checkAttrs(t, steps[0], map[string]any{"acts.step": int64(1), "acts.step.calls": int64(2), "acts.step.failed_calls": int64(1)})
	checkAttrs(t, steps[1], map[string]any{"acts.step": int64(2), "acts.step.calls": int64(0), "acts.step.failed_calls": int64(0)})
	chats := find(spans, "chat claude-test")
	slices.SortFunc(chats, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	checkAttrs(t, chats[0], map[string]any{
		"gen_ai.operation.name":                    "chat",
		"gen_ai.provider.name":                     "anthropic",
		"server.address":                           "api.anthropic.com",
		"server.port":                              int64(443),
		"gen_ai.request.model":                     "claude-test",
		"gen_ai.output.type":                       "json",
		"gen_ai.request.stream":                    true,
		"gen_ai.response.finish_reasons":           []string{"stop"},
		"gen_ai.usage.input_tokens":                int64(160),
		"gen_ai.usage.output_tokens":               int64(25),
		"gen_ai.usage.cache_read.input_tokens":     int64(50),
		"gen_ai.usage.cache_creation.input_tokens": int64(10),
		"gen_ai.usage.reasoning.output_tokens":     int64(5),
	})
	if parentOf(chats[0]) != idOf(steps[0]) || parentOf(chats[1]) != idOf(steps[1]) {
		t.Error("a request is not a child of its step")
	}
	if id, ok := attrs(chats[0])["gen_ai.conversation.id"]; ok {
		t.Errorf("a request of a run with no id has the conversation %v", id)
	}
	if a := attrs(chats[1]); a["gen_ai.usage.cache_read.input_tokens"] != nil || a["gen_ai.usage.input_tokens"] != int64(10) {
		t.Errorf("second request's usage: %v", a)
	}
	lookup, charge := find(spans, "execute_tool lookup")[0], find(spans, "execute_tool charge")[0]
	checkAttrs(t, lookup, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "1.0",
		"gen_ai.tool.type": "function", "gen_ai.tool.description": "Looks a customer up."})
	checkAttrs(t, charge, map[string]any{"gen_ai.tool.name": "charge", "gen_ai.tool.call.id": "1.1", "error.type": "runtime", "gen_ai.tool.type": "function"})
	if d, ok := attrs(charge)["gen_ai.tool.description"]; ok {
		t.Errorf("a tool with no description has gen_ai.tool.description %v", d)
	}
	if lookup.Status().Code != codes.Unset {
		t.Errorf("lookup status %v", lookup.Status())
	}
	if st := charge.Status(); st.Code != codes.Error || !strings.Contains(st.Description, "card declined") {
		t.Errorf("charge status %v", st)
	}
	if ev := charge.Events(); len(ev) != 1 || ev[0].Name != "exception" {
		t.Errorf("charge events %v", ev)
	}
	for _, s := range spans {
		if s.SpanContext().TraceID() != run.SpanContext().TraceID() {
			t.Errorf("%s is in another trace", s.Name())
		}
	}
}

func TestRequestFails(t *testing.T) {
	for _, tt := range []struct {
		name     string
		err      error
		wantType string
	}{
		{"provider error", &provider.Error{Provider: "anthropic", Status: 529, Err: errors.New("overloaded")}, "529"},
		{"other error", errors.New("connection reset"), "_OTHER"},
		{"timeout", &provider.TimeoutError{Provider: "anthropic", Phase: provider.PhaseFirstByte, After: time.Minute}, "timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, rec := recording()
			cfg, msgs := twoSteps()
			cfg.Provider = described{scripted.New(scripted.Response{Err: tt.err}), anthropic}
			_, err := tr.Run(context.Background(), cfg, anyOutput, msgs)
			if err == nil {
				t.Fatal("the run did not fail")
			}
			spans := rec.Ended()
			want := "invoke_agent (error)\n  step (error)\n    chat claude-test (error)\n"
			if got := tree(spans); got != want {
				t.Fatalf("spans:\n%s\nwant:\n%s", got, want)
			}
			chat := find(spans, "chat claude-test")[0]
			checkAttrs(t, chat, map[string]any{"error.type": tt.wantType})
			for _, s := range spans {
				if !strings.Contains(s.Status().Description, tt.err.Error()) {
					t.Errorf("%s: status %q does not say %q", s.Name(), s.Status().Description, tt.err)
				}
				if ev := s.Events(); len(ev) != 1 || ev[0].Name != "exception" {
					t.Errorf("%s: events %v", s.Name(), ev)
				}
			}
			if run := find(spans, "invoke_agent")[0]; attrs(run)["gen_ai.usage.input_tokens"] != int64(0) {
				t.Errorf("run usage %v", attrs(run))
			}
		})
	}
}

// rendezvous is an activity that returns once n calls are running at
// once, or fails after a while.
func rendezvous(n int) agent.Activity {
	var wg sync.WaitGroup
	wg.Add(n)
	return agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		wg.Done()
		all := make(chan struct{})
		go func() { wg.Wait(); close(all) }()
		select {
		case <-all:
			return &agent.Result{Value: json.RawMessage(`true`)}, nil
		case <-time.After(10 * time.Second):
			return nil, errors.New("the other calls never ran alongside")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
}

// byContent answers each request with the response of the first key its
// messages contain, or else with the last response.
func byContent(keys []string, responses ...scripted.Response) provider.Provider {
	return provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		var text strings.Builder
		for _, m := range req.Messages {
			text.WriteString(m.Text + "\n")
		}
		i := slices.IndexFunc(keys, func(k string) bool { return strings.Contains(text.String(), k) })
		if i < 0 {
			i = len(responses) - 1
		}
		return scripted.New(responses[i]).Generate(ctx, req)
	})
}

func TestConcurrentCalls(t *testing.T) {
	// Two calls of code that run at once, and two latent calls whose
	// requests are made at once: every call is a child of its step, and
	// a latent call's request a child of its call.
	tr, rec := recording()
	// Two runs at once, too: each keeps its own spans.
	var wg sync.WaitGroup
	for range 2 {
		reg := agent.NewRegistry()
		for _, n := range []string{"a", "b"} {
			reg.Tool(n, json.RawMessage(`{"type":"object"}`))
		}
		both := rendezvous(2)
		reg.Activity("a", both)
		reg.Activity("b", both)
		reg.Tool("guessX", json.RawMessage(`{"type":"object","description":"guess x","properties":{"_output":{"type":"integer"}}}`))
		reg.Tool("guessY", json.RawMessage(`{"type":"object","description":"guess y","properties":{"_output":{"type":"integer"}}}`))
		model := byContent([]string{"guess x", "guess y", "## Plan"},
			scripted.Response{Solutions: []string{`{"output":1}`}, Usage: provider.Usage{Input: 3}},
			scripted.Response{Solutions: []string{`{"output":2}`}, Usage: provider.Usage{Input: 4}},
			scripted.Response{Solutions: []string{`{"calls":[],"output":{}}`}, Usage: provider.Usage{Input: 2}},
			scripted.Response{Solutions: []string{`{"calls":[{"_tool":"a","_outputPath":"†state.a"},{"_tool":"b","_outputPath":"†state.b"},
			{"_tool":"guessX","_outputPath":"†state.x"},{"_tool":"guessY","_outputPath":"†state.y"}],"output":null}`}, Usage: provider.Usage{Input: 1}},
		)
		cfg := agent.Config{Provider: model, Registry: reg, Model: "m", Logger: slog.New(slog.DiscardHandler)}
		msgs := append(tools("a", "b", "guessX", "guessY"), message.Text("go"))
		wg.Go(func() {
			if _, err := tr.Run(context.Background(), cfg, anyOutput, msgs); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	spans := rec.Ended()
	want := `invoke_agent
  step
    chat m
    execute_tool a
    execute_tool b
    execute_tool guessX
      chat m
    execute_tool guessY
      chat m
  step
    chat m
`
	if got := tree(spans); got != strings.Repeat(want, 2) {
		t.Fatalf("spans:\n%s\nwant twice:\n%s", got, want)
	}
	for _, run := range find(spans, "invoke_agent") {
		var inputs []int64
		for _, s := range spans {
			if s.SpanContext().TraceID() == run.SpanContext().TraceID() && s.Name() == "chat m" {
				inputs = append(inputs, attrs(s)["gen_ai.usage.input_tokens"].(int64))
			}
		}
		slices.Sort(inputs)
		if !slices.Equal(inputs, []int64{1, 2, 3, 4}) {
			t.Errorf("the requests of a run used %v input tokens, want 1, 2, 3, 4: runs mixed up", inputs)
		}
	}
	a, b := find(spans, "execute_tool a"), find(spans, "execute_tool b")
	for i := range a {
		if a[i].StartTime().After(b[i].EndTime()) || b[i].StartTime().After(a[i].EndTime()) {
			t.Error("calls a and b did not overlap")
		}
	}
}

func TestLatentAndDelegate(t *testing.T) {
	for _, tt := range []struct {
		name, tool, def string
	}{
		{"latent", "guess", `{"type":"object","properties":{"_output":{"type":"integer"}}}`},
		{"delegate", "translate", `{"type":"object","description":"You translate.","_delegate":"anonymous","properties":{"_output":{"type":"integer"}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, rec := recording()
			reg := agent.NewRegistry()
			reg.Tool(tt.tool, json.RawMessage(tt.def))
			model := scripted.New(
				scripted.Response{Solutions: []string{`{"calls":[{"_tool":"` + tt.tool + `","_outputPath":"†state.n"}],"output":null}`}},
				scripted.Response{Solutions: []string{`{"output":7}`}, Usage: provider.Usage{Input: 42, Output: 1}},
				scripted.Response{Solutions: []string{`{"calls":[],"output":{}}`}},
			)
			cfg := agent.Config{Provider: model, Registry: reg, Model: "m", Logger: slog.New(slog.DiscardHandler)}
			if _, err := tr.Run(context.Background(), cfg, anyOutput, append(tools(tt.tool), message.Text("go"))); err != nil {
				t.Fatal(err)
			}
			spans := rec.Ended()
			want := "invoke_agent\n  step\n    chat m\n    execute_tool " + tt.tool + "\n      chat m\n  step\n    chat m\n"
			if got := tree(spans); got != want {
				t.Fatalf("spans:\n%s\nwant:\n%s", got, want)
			}
			var own sdktrace.ReadOnlySpan
			for _, s := range find(spans, "chat m") {
				if attrs(s)["gen_ai.usage.input_tokens"] == int64(42) {
					own = s
				}
			}
			if own == nil {
				t.Fatal("no span for the call's request")
			}
			if call := find(spans, "execute_tool "+tt.tool)[0]; parentOf(own) != idOf(call) {
				t.Error("the call's request is not a child of its call")
			}
		})
	}
}

// render writes an event as text, for comparing streams.
func render(ev agent.RunEvent, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	s := fmt.Sprintf("%s %d", ev.Kind, ev.Step)
	if ev.Call != nil {
		s += fmt.Sprintf(" call %s %s %s", ev.Call.ID, ev.Call.Tool, ev.Call.Params)
	}
	if ev.Err != nil {
		s += " err " + ev.Err.Error()
	}
	if ev.Message != nil {
		m, _ := json.Marshal(ev.Message)
		s += " message " + string(m)
	}
	if ev.Usage != nil {
		s += fmt.Sprintf(" usage %+v", *ev.Usage)
	}
	if ev.Result != nil {
		s += fmt.Sprintf(" result %d %s %+v", ev.Result.Steps, ev.Result.Solution.Output, ev.Result.Usage)
	}
	return s + ev.Text
}

func TestEventsUnchanged(t *testing.T) {
	// Tracing or not, the events are agent.Events'; without a provider
	// nothing is recorded, not even through the global one.
	rec := tracetest.NewSpanRecorder()
	global := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	defer otel.SetTracerProvider(global)
	on, onRec := recording()
	for _, tt := range []struct {
		name string
		t    *telemetry.Tracer
	}{
		{"nil", nil},
		{"New(nil)", telemetry.New(nil)},
		{"on", on},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var want, got []string
			cfg, msgs := twoSteps()
			for ev, err := range agent.Events(context.Background(), cfg, anyOutput, msgs) {
				want = append(want, render(ev, err))
			}
			cfg, msgs = twoSteps()
			for ev, err := range tt.t.Events(context.Background(), cfg, anyOutput, msgs) {
				got = append(got, render(ev, err))
			}
			// Calls finish in any order: compare the events as sets.
			slices.Sort(want)
			slices.Sort(got)
			if d := cmp.Diff(got, want); d != "" {
				t.Errorf("events (-got +want):\n%s", d)
			}
			cfg, msgs = twoSteps()
			res, err := tt.t.Run(context.Background(), cfg, anyOutput, msgs)
			if err != nil || render(agent.RunEvent{Result: res}, nil) != " 0 result 2 {\"done\":true} {Input:110 Output:25 Thinking:5 CacheRead:50 CacheWrite:10 CacheWriteLong:4}" {
				t.Errorf("Run = %s, %v", render(agent.RunEvent{Result: res}, nil), err)
			}
		})
	}
	if n := len(rec.Started()); n != 0 {
		t.Errorf("%d spans recorded through the global provider", n)
	}
	if n := len(onRec.Ended()); n != 2*7 {
		t.Errorf("%d spans when on, want 14", n)
	}
	p := scripted.New()
	if telemetry.New(nil).Provider(p) != provider.Provider(p) {
		t.Error("an off Tracer wrapped the provider")
	}
}

func TestProviderDescriber(t *testing.T) {
	tr, rec := recording()
	p := tr.Provider(described{scripted.Solutions(`{"output":1}`), anthropic})
	d, ok := p.(provider.Describer)
	if !ok || d.Endpoint() != anthropic {
		t.Fatalf("traced provider: Describer %v", ok)
	}
	if tr.Provider(p) != p {
		t.Error("a traced provider was traced again")
	}
	if _, ok := tr.Provider(scripted.New()).(provider.Describer); ok {
		t.Error("a provider with no Endpoint became a Describer")
	}
	// Outside a run, a request's span is a child of the context's.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	c, parent := tp.Tracer("test").Start(context.Background(), "parent")
	if _, err := agent.Request(c, agent.Config{Provider: p}, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("one")}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	if got := tree(rec.Ended()); got != "parent\n  chat\n" {
		t.Errorf("spans:\n%s", got)
	}
	chat := find(rec.Ended(), "chat")[0]
	checkAttrs(t, chat, map[string]any{"gen_ai.provider.name": "anthropic", "gen_ai.output.type": "json"})
	if _, ok := attrs(chat)["gen_ai.request.model"]; ok {
		t.Error("a request with no model has gen_ai.request.model")
	}
}

// TestDurableNoID: a durable run given no id has one from the start, so
// its requests say their conversation, the id the run is stored under.
func TestDurableNoID(t *testing.T) {
	tr, rec := recording()
	cfg, msgs := twoSteps()
	st := store.NewMemory()
	cfg.Store = st
	if _, err := tr.Run(context.Background(), cfg, anyOutput, msgs); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for run, err := range st.Runs(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	if len(ids) != 1 {
		t.Fatalf("runs %q", ids)
	}
	chats := find(rec.Ended(), "chat claude-test")
	if len(chats) != 2 {
		t.Fatalf("%d requests", len(chats))
	}
	for _, c := range chats {
		checkAttrs(t, c, map[string]any{"gen_ai.conversation.id": ids[0]})
	}
}

func TestDurable(t *testing.T) {
	// A durable run saves the traced provider's Endpoint; a resume is a
	// run span of its own, named by the run's id, as are the requests of
	// both: the run's id is their conversation. A resume whose Config
	// names no model asks for the model the run saved, not the
	// provider's default, and its run span says so.
	tr, rec := recording()
	cfg, msgs := twoSteps()
	st := store.NewMemory()
	cfg.Store, cfg.RunID = st, "r1"
	for ev, err := range tr.Events(context.Background(), cfg, anyOutput, msgs) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventStep && ev.Step == 2 {
			break // the second step is resumed
		}
	}
	run, err := st.Load(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	saved, err := agent.SavedSettings(run)
	if err != nil || saved == nil || saved.Endpoint == nil || *saved.Endpoint != anthropic {
		t.Fatalf("saved settings %+v, %v", saved, err)
	}
	e := anthropic
	e.Model = "claude-default"
	cfg.Provider, cfg.Model = described{scripted.Solutions(`{"calls":[],"output":{"done":true}}`), e}, ""
	res, err := tr.Resume(context.Background(), cfg, "r1")
	if err != nil || !res.Solution.Done() {
		t.Fatalf("resume: %v", err)
	}
	spans := rec.Ended()
	want := `invoke_agent
  step
    chat claude-test
    execute_tool lookup
    execute_tool charge (error)
  step
invoke_agent
  step
    chat claude-test
`
	if got := tree(spans); got != want {
		t.Fatalf("spans:\n%s\nwant:\n%s", got, want)
	}
	for _, s := range find(spans, "invoke_agent") {
		checkAttrs(t, s, map[string]any{"gen_ai.conversation.id": "r1", "gen_ai.request.model": "claude-test"})
	}
	for _, s := range find(spans, "chat claude-test") {
		checkAttrs(t, s, map[string]any{"gen_ai.conversation.id": "r1"})
	}
}

func TestStopEndsSpans(t *testing.T) {
	// A consumer that stops while calls run: every span ends.
	tr, rec := recording()
	reg := agent.NewRegistry()
	reg.Tool("slow", json.RawMessage(`{"type":"object"}`))
	reg.Activity("slow", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	model := scripted.Solutions(`{"calls":[{"_tool":"slow","_outputPath":"†state.s"}],"output":null}`)
	cfg := agent.Config{Provider: model, Registry: reg, Logger: slog.New(slog.DiscardHandler)}
	for ev, err := range tr.Events(context.Background(), cfg, anyOutput, append(tools("slow"), message.Text("go"))) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventCallStarted {
			break
		}
	}
	if started, ended := len(rec.Started()), len(rec.Ended()); started != 4 || ended != started {
		t.Errorf("%d spans started, %d ended; want 4", started, ended)
	}
}

func TestNestedRun(t *testing.T) {
	// A traced run inside a call of a traced run is a child of the call;
	// the context's span is the parent of the outer run.
	tr, rec := recording()
	reg := agent.NewRegistry()
	reg.Tool("inner", json.RawMessage(`{"type":"object"}`))
	inner := scripted.Solutions(`{"output":{"ok":true}}`)
	reg.Activity("inner", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		res, err := tr.Run(ctx, agent.Config{Provider: inner, Model: "small", Logger: slog.New(slog.DiscardHandler)}, anyOutput, []message.Message{message.Text("inner")})
		if err != nil {
			return nil, err
		}
		return &agent.Result{Value: res.Solution.Output}, nil
	}))
	model := scripted.Solutions(`{"calls":[{"_tool":"inner","_outputPath":"†state.i"}],"output":null}`, `{"calls":[],"output":{}}`)
	cfg := agent.Config{Provider: model, Registry: reg, Model: "big", Logger: slog.New(slog.DiscardHandler)}
	c, root := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test").Start(context.Background(), "request")
	if _, err := tr.Run(c, cfg, anyOutput, append(tools("inner"), message.Text("go"))); err != nil {
		t.Fatal(err)
	}
	root.End()
	want := `request
  invoke_agent
    step
      chat big
      execute_tool inner
        invoke_agent
          step
            chat small
    step
      chat big
`
	if got := tree(rec.Ended()); got != want {
		t.Fatalf("spans:\n%s\nwant:\n%s", got, want)
	}
}

func TestActivitySpans(t *testing.T) {
	// An activity's context holds its call's span: the spans it starts
	// (an HTTP client's, say) are the call's children.
	tr, rec := recording()
	reg := agent.NewRegistry()
	reg.Tool("fetch", json.RawMessage(`{"type":"object"}`))
	reg.Activity("fetch", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		_, s := trace.SpanFromContext(ctx).TracerProvider().Tracer("http").Start(ctx, "GET")
		s.End()
		return &agent.Result{Value: json.RawMessage(`true`)}, nil
	}))
	model := scripted.Solutions(`{"calls":[{"_tool":"fetch","_outputPath":"†state.f"}],"output":null}`, `{"calls":[],"output":{}}`)
	cfg := agent.Config{Provider: model, Registry: reg, Model: "m", Logger: slog.New(slog.DiscardHandler)}
	if _, err := tr.Run(context.Background(), cfg, anyOutput, append(tools("fetch"), message.Text("go"))); err != nil {
		t.Fatal(err)
	}
	want := `invoke_agent
  step
    chat m
    execute_tool fetch
      GET
  step
    chat m
`
	if got := tree(rec.Ended()); got != want {
		t.Fatalf("spans:\n%s\nwant:\n%s", got, want)
	}
}

func TestNestedRunCalls(t *testing.T) {
	// The runs inside a call have calls of their own, whose IDs the outer
	// run's repeat: the inner run's "1.0" while the outer run's "1.0" runs
	// too. A latent call's request goes under the call of the run it is
	// of when that run is traced, and under the outer call when it is not.
	for _, tt := range []struct {
		name   string
		traced bool
		want   string
	}{
		{"traced", true, `invoke_agent
  step
    chat big
    execute_tool wait
    execute_tool inner
      invoke_agent
        step
          chat small
          execute_tool guess
            chat small
        step
          chat small
  step
    chat big
`},
		{"untraced", false, `invoke_agent
  step
    chat big
    execute_tool wait
    execute_tool inner
      chat small
      chat small
      chat small
  step
    chat big
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, rec := recording()
			innerReg := agent.NewRegistry()
			innerReg.Tool("guess", json.RawMessage(`{"type":"object","description":"guess","properties":{"_output":{"type":"integer"}}}`))
			reg := agent.NewRegistry()
			reg.Tool("inner", json.RawMessage(`{"type":"object"}`))
			reg.Tool("wait", json.RawMessage(`{"type":"object"}`))
			innerDone := make(chan struct{})
			reg.Activity("wait", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				<-innerDone
				return &agent.Result{Value: json.RawMessage(`true`)}, nil
			}))
			reg.Activity("inner", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				defer close(innerDone)
				small := byContent([]string{"The tool: guess", "## Plan"},
					scripted.Response{Solutions: []string{`{"output":3}`}},
					scripted.Response{Solutions: []string{`{"calls":[],"output":{"ok":true}}`}},
					scripted.Response{Solutions: []string{`{"calls":[{"_tool":"guess","_outputPath":"†state.g"}],"output":null}`}},
				)
				cfg := agent.Config{Provider: tr.Provider(small), Registry: innerReg, Model: "small", Logger: slog.New(slog.DiscardHandler)}
				msgs := append(tools("guess"), message.Text("inner"))
				run := agent.Run
				if tt.traced {
					run = tr.Run
				}
				res, err := run(ctx, cfg, anyOutput, msgs)
				if err != nil {
					return nil, err
				}
				return &agent.Result{Value: res.Solution.Output}, nil
			}))
			model := scripted.Solutions(`{"calls":[{"_tool":"wait","_outputPath":"†state.w"},{"_tool":"inner","_outputPath":"†state.i"}],"output":null}`, `{"calls":[],"output":{}}`)
			cfg := agent.Config{Provider: model, Registry: reg, Model: "big", Logger: slog.New(slog.DiscardHandler)}
			if _, err := tr.Run(context.Background(), cfg, anyOutput, append(tools("wait", "inner"), message.Text("go"))); err != nil {
				t.Fatal(err)
			}
			if got := tree(rec.Ended()); got != tt.want {
				t.Fatalf("spans:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestStepLog(t *testing.T) {
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}})
	for _, tt := range []struct {
		name string
		t    *telemetry.Tracer
		want string
	}{
		{"no-op provider", telemetry.New(noop.NewTracerProvider()), `{"level":"INFO","msg":"step","step":1,"model":"claude-test","tokens":{"input":100,"output":20,"thinking":5,"cache_read":50,"cache_write":10,"cache_write_long":4},"calls":2,"failed":1,"duration":0}
{"level":"INFO","msg":"step","step":2,"model":"claude-test","tokens":{"input":10,"output":5,"thinking":0,"cache_read":0,"cache_write":0},"calls":0,"failed":0,"duration":0}
`},
		{"off", telemetry.New(nil), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			buf.Reset()
			cfg, msgs := twoSteps()
			cfg.Logger = slog.New(h)
			if _, err := tt.t.Run(context.Background(), cfg, anyOutput, msgs); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("log:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// usageOf returns the usage attributes of s.
func usageOf(s sdktrace.ReadOnlySpan) [2]int64 {
	a := attrs(s)
	in, _ := a["gen_ai.usage.input_tokens"].(int64)
	out, _ := a["gen_ai.usage.output_tokens"].(int64)
	return [2]int64{in, out}
}

func TestRunUsagePerAttempt(t *testing.T) {
	// Each run span counts the requests made under it: a run the consumer
	// left, then its resume, whose result counts both. Added up, the run
	// spans count every request once.
	tr, rec := recording()
	cfg, msgs := twoSteps()
	st := store.NewMemory()
	cfg.Store, cfg.RunID = st, "r1"
	for ev, err := range tr.Events(context.Background(), cfg, anyOutput, msgs) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventStep && ev.Step == 2 {
			break
		}
	}
	cfg.Provider = described{scripted.New(scripted.Response{Solutions: []string{`{"calls":[],"output":{"done":true}}`}, Usage: provider.Usage{Input: 7, Output: 1}}), anthropic}
	res, err := tr.Resume(context.Background(), cfg, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Usage; got.Input != 107 || got.Output != 21 {
		t.Fatalf("the resume's result counts %+v, want both attempts", got)
	}
	runs := find(rec.Ended(), "invoke_agent")
	slices.SortFunc(runs, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	var got [][2]int64
	for _, s := range runs {
		got = append(got, usageOf(s))
	}
	if want := [][2]int64{{160, 25}, {7, 1}}; !slices.Equal(got, want) {
		t.Errorf("run spans' usage (input, output) %v, want %v", got, want)
	}
}

func TestPlanSpans(t *testing.T) {
	// An instanced plan: a run span, whose children are the calls of
	// each instance, a latent call's request under its call.
	tr, rec := recording()
	reg := agent.NewRegistry()
	reg.Tool("moderate", json.RawMessage(`{"type":"object","properties":{"comment":{"type":"string"}}}`))
	reg.Activity("moderate", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) { return agent.Value("ok") }))
	reg.Tool("guess", json.RawMessage(`{"type":"object","description":"guess","properties":{"_output":{"type":"integer"}}}`))
	model := scripted.New(
		scripted.Response{Solutions: []string{`{"output":3}`}, Usage: provider.Usage{Input: 2, Output: 1}},
		scripted.Response{Solutions: []string{`{"output":4}`}, Usage: provider.Usage{Input: 2, Output: 1}},
	)
	var msgs []message.Message
	if err := json.Unmarshal([]byte(`[{"type":"tool","tool":"moderate"},{"type":"tool","tool":"guess"},
		{"type":"input","_instance":"a","comment":"x"},{"type":"input","_instance":"b","comment":"y"}]`), &msgs); err != nil {
		t.Fatal(err)
	}
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"moderate","comment":"†input.comment","_outputPath":"†state.m"}`), json.RawMessage(`{"_tool":"guess","_outputPath":"†state.g"}`)}
	cfg := agent.Config{Provider: model, Registry: reg, Model: "m", Concurrency: 1, Logger: slog.New(slog.DiscardHandler)}
	res, err := tr.ExecutePlanInstances(context.Background(), cfg, plan, msgs)
	if err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	want := `invoke_agent
  execute_tool moderate
  execute_tool guess
    chat m
  execute_tool moderate
  execute_tool guess
    chat m
`
	if got := tree(spans); got != want {
		t.Fatalf("spans:\n%s\nwant:\n%s", got, want)
	}
	var instances []string
	for _, s := range find(spans, "execute_tool guess") {
		instances = append(instances, attrs(s)["acts.call.instance"].(string))
	}
	if slices.Sort(instances); !slices.Equal(instances, []string{"a", "b"}) {
		t.Errorf("instances %v", instances)
	}
	if got := usageOf(find(spans, "invoke_agent")[0]); got != [2]int64{4, 2} || res.Usage.Input != 4 {
		t.Errorf("run span usage %v, result %+v", got, res.Usage)
	}
	if n := len(rec.Started()); n != len(spans) {
		t.Errorf("%d spans started, %d ended", n, len(spans))
	}
}

func TestContinueSpans(t *testing.T) {
	// A turn of a conversation is a run span of its own, named by the
	// run's id, counting the turn's requests.
	tr, rec := recording()
	cfg, msgs := twoSteps()
	st := store.NewMemory()
	cfg.Store, cfg.RunID = st, "r1"
	if _, err := tr.Run(context.Background(), cfg, anyOutput, msgs); err != nil {
		t.Fatal(err)
	}
	cfg.RunID = ""
	cfg.Provider = described{scripted.New(scripted.Response{Solutions: []string{`{"calls":[],"output":{"done":true}}`}, Usage: provider.Usage{Input: 7, Output: 1}}), anthropic}
	if _, err := tr.Continue(context.Background(), cfg, "r1", message.Text("and again")); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	want := `invoke_agent
  step
    chat claude-test
    execute_tool lookup
    execute_tool charge (error)
  step
    chat claude-test
invoke_agent
  step
    chat claude-test
`
	if got := tree(spans); got != want {
		t.Fatalf("spans:\n%s\nwant:\n%s", got, want)
	}
	runs := find(spans, "invoke_agent")
	slices.SortFunc(runs, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	checkAttrs(t, runs[1], map[string]any{"gen_ai.conversation.id": "r1", "gen_ai.usage.input_tokens": int64(7), "acts.run.steps": int64(3)})
}

func TestCancelledCall(t *testing.T) {
	// A run cancelled while a call runs: the call failed because of the
	// cancellation, not of its code, and says so.
	tr, rec := recording()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := agent.NewRegistry()
	reg.Tool("slow", json.RawMessage(`{"type":"object"}`))
	reg.Activity("slow", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	model := scripted.Solutions(`{"calls":[{"_tool":"slow","_outputPath":"†state.s"}],"output":null}`, `{"calls":[],"output":{}}`)
	cfg := agent.Config{Provider: model, Registry: reg, Model: "m", Logger: slog.New(slog.DiscardHandler)}
	if _, err := tr.Run(ctx, cfg, anyOutput, append(tools("slow"), message.Text("go"))); !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	spans := rec.Ended()
	if want := "invoke_agent (error)\n  step (error)\n    chat m\n    execute_tool slow (error)\n"; tree(spans) != want {
		t.Fatalf("spans:\n%s\nwant:\n%s", tree(spans), want)
	}
	for _, name := range []string{"invoke_agent", "step", "execute_tool slow"} {
		checkAttrs(t, find(spans, name)[0], map[string]any{"error.type": "canceled"})
	}
}

func TestErrorsHoldNoArguments(t *testing.T) {
	// A call whose arguments break its schema: the span says where and
	// which keyword, not what the model wrote there.
	tr, rec := recording()
	reg := agent.NewRegistry()
	reg.Tool("mail", json.RawMessage(`{"type":"object","properties":{"to":{"type":"string","pattern":"^[a-z]+@example\\.com$"},"n":{"type":"integer","maximum":3}}}`))
	reg.Activity("mail", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) { return agent.Value(1) }))
	model := scripted.Solutions(`{"calls":[{"_tool":"mail","to":"ada.lovelace@secret.org","n":99,"_outputPath":"†state.a"}],"output":null}`, `{"calls":[],"output":{}}`)
	cfg := agent.Config{Provider: model, Registry: reg, Model: "m", Logger: slog.New(slog.DiscardHandler)}
	if _, err := tr.Run(context.Background(), cfg, anyOutput, append(tools("mail"), message.Text("go"))); err != nil {
		t.Fatal(err)
	}
	call := find(rec.Ended(), "execute_tool mail")[0]
	want := "structural error in mail: params: at /n: maximum; at /to: pattern"
	if got := call.Status().Description; got != want {
		t.Errorf("status %q, want %q", got, want)
	}
	ev := call.Events()
	if len(ev) != 1 || ev[0].Name != "exception" {
		t.Fatalf("events %v", ev)
	}
	for _, a := range ev[0].Attributes {
		if strings.Contains(a.Value.String(), "secret") || strings.Contains(a.Value.String(), "99") {
			t.Errorf("%s = %q holds the arguments", a.Key, a.Value.String())
		}
	}
	checkAttrs(t, call, map[string]any{"error.type": "structural"})
}

func TestRunDefaultModel(t *testing.T) {
	// A run whose Config names no model asks the provider's default, which
	// its Endpoint says: the run span, the request spans and the step logs
	// name it.
	tr, rec := recording()
	var buf bytes.Buffer
	cfg, msgs := twoSteps()
	e := anthropic
	e.Model = "claude-default"
	cfg.Model, cfg.Provider = "", described{cfg.Provider.(described).Provider, e}
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	if _, err := tr.Run(context.Background(), cfg, anyOutput, msgs); err != nil {
		t.Fatal(err)
	}
	checkAttrs(t, find(rec.Ended(), "invoke_agent")[0], map[string]any{"gen_ai.request.model": "claude-default"})
	chats := find(rec.Ended(), "chat claude-default")
	if len(chats) != 2 {
		t.Fatalf("spans:\n%s", tree(rec.Ended()))
	}
	for _, s := range chats {
		checkAttrs(t, s, map[string]any{"gen_ai.request.model": "claude-default"})
	}
	if n := strings.Count(buf.String(), " model=claude-default "); n != 2 {
		t.Errorf("%d step logs name the model:\n%s", n, buf.String())
	}
}

// roomCode is a room's code, which UnmarshalText checks.
type roomCode string

func (c *roomCode) UnmarshalText(b []byte) error {
	if len(b) != 4 {
		return fmt.Errorf("room code %q is not 4 characters", b)
	}
	*c = roomCode(b)
	return nil
}

func TestDecodeErrorsHoldNoArguments(t *testing.T) {
	// A typed tool's arguments that meet its schema but do not decode (a
	// text its type's UnmarshalText refuses, a number too large for its
	// Go type): the span says where, and into what when encoding/json
	// says it, not what the model wrote there.
	tr, rec := recording()
	reg := agent.NewRegistry()
	if err := agent.Func(reg, "meet", "", func(_ context.Context, p struct {
		Room roomCode `json:"room"`
	}) (int, error) {
		return 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := agent.Func(reg, "count", "", func(_ context.Context, p struct {
		N int `json:"n"`
	}) (int, error) {
		return 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	model := scripted.Solutions(`{"calls":[{"_tool":"meet","room":"tea with ada.lovelace@secret.org","_outputPath":"†state.a"},`+
		`{"_tool":"count","n":98765e30,"_outputPath":"†state.b"}],"output":null}`, `{"calls":[],"output":{}}`)
	cfg := agent.Config{Provider: model, Registry: reg, Model: "m", Logger: slog.New(slog.DiscardHandler)}
	if _, err := tr.Run(context.Background(), cfg, anyOutput, append(tools("meet", "count"), message.Text("go"))); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"meet":  "structural error in meet: params: schema: decode at (root): the value does not decode",
		"count": "structural error in count: params: schema: decode at /n: cannot decode JSON number into int",
	} {
		call := find(rec.Ended(), "execute_tool "+name)[0]
		if got := call.Status().Description; got != want {
			t.Errorf("%s: status %q, want %q", name, got, want)
		}
		for _, ev := range call.Events() {
			for _, a := range ev.Attributes {
				if v := a.Value.String(); strings.Contains(v, "secret") || strings.Contains(v, "98765") {
					t.Errorf("%s: %s = %q holds the arguments", name, a.Key, v)
				}
			}
		}
		checkAttrs(t, call, map[string]any{"error.type": "structural"})
	}
}
