package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
	"github.com/google/go-cmp/cmp"
)

// scribble overwrites every byte of b: what a caller that owns b may do.
func scribble(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}

// TestStreamElementsAreTheCallers writes over every element a Stream
// hands over as it arrives: the elements after it and the final solution
// must be as the model wrote them.
func TestStreamElementsAreTheCallers(t *testing.T) {
	calls := []string{`{"_tool":"a","x":1}`, `{"_tool":"a","x":"two"}`, `{"_tool":"a","x":[3]}`}
	answer := `{"calls":[` + calls[0] + `,` + calls[1] + `,` + calls[2] + `],"output":{"ok":true}}`
	reg := agent.NewRegistry()
	reg.Tool("a", json.RawMessage(`{"type":"object"}`))
	cfg := agent.Config{Provider: scripted.Solutions(answer), Registry: reg, CallbackPath: "calls"}
	var got []string
	var resp *agent.Response
	for ev, err := range agent.Stream(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), ctxOf(t, `[{"type":"tool","tool":"a"}]`)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Element != nil {
			got = append(got, string(ev.Element.Value))
			scribble(ev.Element.Value)
		}
		if ev.Response != nil {
			resp = ev.Response
		}
	}
	if d := cmp.Diff(got, calls); d != "" {
		t.Errorf("elements (-got +want):\n%s", d)
	}
	sol := resp.Solutions[0]
	if string(sol.Raw) != answer || len(sol.Calls) != 3 || string(sol.Calls[1]) != calls[1] {
		t.Errorf("the solution changed with the elements: %s, calls %s", sol.Raw, sol.Calls)
	}
}

// TestSolutionPartsAreTheCallers writes over each part of a solution in
// turn: the others must not change.
func TestSolutionPartsAreTheCallers(t *testing.T) {
	answer := `{"calls":[{"_tool":"a","x":1}],"output":{"ok":true}}`
	reg := agent.NewRegistry()
	reg.Tool("a", json.RawMessage(`{"type":"object"}`))
	request := func() agent.Solution {
		resp, err := agent.Request(context.Background(), agent.Config{Provider: scripted.Solutions(answer), Registry: reg},
			json.RawMessage(`{"type":"object"}`), ctxOf(t, `[{"type":"tool","tool":"a"}]`))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Solutions[0]
	}
	sol := request()
	scribble(sol.Output)
	scribble(sol.Calls[0])
	if string(sol.Raw) != answer {
		t.Errorf("Raw changed with Output and Calls: %s", sol.Raw)
	}
	sol = request()
	scribble(sol.Raw)
	if string(sol.Output) != `{"ok":true}` || string(sol.Calls[0]) != `{"_tool":"a","x":1}` {
		t.Errorf("Output or Calls changed with Raw: %s, %s", sol.Output, sol.Calls[0])
	}
}

// TestPlanCallsAreTheCallers: the calls Plan returns for approval and
// the solution's are the caller's each: a person editing one in place
// does not edit the other.
func TestPlanCallsAreTheCallers(t *testing.T) {
	const call = `{"_tool":"put","v":1,"_outputPath":"†state.x"}`
	p := scripted.Solutions(`{"calls":[` + call + `],"output":null}`)
	sol, calls, err := agent.Plan(context.Background(), agent.Config{Registry: echoReg(), Provider: p}, anyOut, ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`))
	if err != nil {
		t.Fatal(err)
	}
	scribble(calls[0])
	if string(sol.Calls[0]) != call {
		t.Errorf("the solution's call changed with the plan's: %s", sol.Calls[0])
	}
}

// TestRunIdeaIsTheCallers: the Idea a run makes shares no memory with
// the run's result.
func TestRunIdeaIsTheCallers(t *testing.T) {
	const answer = `{"output":{"done":true}}`
	res, err := agent.Run(context.Background(), agent.Config{Registry: agent.NewRegistry(), Provider: scripted.Solutions(answer)}, anyOut, ctxOf(t, `[{"type":"text","text":"go"}]`))
	if err != nil {
		t.Fatal(err)
	}
	idea := res.Idea(anyOut)
	scribble(idea.Solution)
	if string(res.Solution.Raw) != answer {
		t.Errorf("the result's solution changed with the Idea's: %s", res.Solution.Raw)
	}
}

// TestRunValuesAreTheCallers runs the same agent twice, the second time
// writing over every message, solution and log entry handed out: the
// logs must be the same.
func TestRunValuesAreTheCallers(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("inc", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`))
	reg.Activity("inc", agent.Bind(func(ctx context.Context, p struct {
		X int `json:"x"`
	}) (map[string]int, error) {
		return map[string]int{"y": p.X + 1}, nil
	}))
	clock := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	run := func(scribbling bool) []message.Message {
		p := scripted.Solutions(
			`{"calls":[{"_tool":"inc","x":1,"_outputPath":"†state.a"},{"_tool":"inc","x":"†state.a.y","_outputPath":"†state.b"}],"output":null}`,
			`{"calls":[],"output":3}`)
		cfg := agent.Config{Provider: p, Registry: reg, Clock: clock}
		msgs := ctxOf(t, `[{"type":"tool","tool":"inc"},{"type":"state","seen":[1]}]`)
		var res *agent.RunResult
		for ev, err := range agent.Events(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), msgs) {
			if err != nil {
				t.Fatal(err)
			}
			if m := ev.Message; m != nil && scribbling {
				scribble(m.Data)
				scribble(m.Call)
				scribble(m.Plan)
				scribble(m.Failed)
			}
			if ev.Kind == agent.EventDone {
				res = ev.Result
			}
		}
		if scribbling {
			scribble(res.Solution.Raw)
			scribble(res.Solution.Output)
			for i := range res.Log.Len() {
				m := res.Log.At(i)
				scribble(m.Data)
				scribble(m.Call)
				scribble(m.Plan)
				scribble(m.Tool)
			}
			for _, m := range res.Log.Messages() {
				scribble(m.Data)
			}
			if v, ok, err := res.Log.Value(message.Identity{Kind: "state"}); err != nil || !ok {
				t.Fatalf("state: %v", err)
			} else {
				scribble(v)
			}
			if v, err := res.Log.Lookup("state", []string{"a"}); err != nil {
				t.Fatalf("state.a: %v", err)
			} else {
				scribble(v)
			}
		}
		if got := lookup(t, res.Log, "†state.b.y"); got != "3" {
			t.Errorf("state.b.y = %s", got)
		}
		return res.Log.Messages()
	}
	want, got := run(false), run(true)
	if !slices.EqualFunc(got, want, func(a, b message.Message) bool { return cmp.Equal(a, b) }) {
		t.Errorf("the log changed with what was handed out (-got +want):\n%s", cmp.Diff(got, want))
	}
}

// TestRegisteredToolIsACopy: the registry keeps its own copy of a tool's
// definition, compact, and LookupTool hands out one the caller owns.
func TestRegisteredToolIsACopy(t *testing.T) {
	def := []byte("{ \"type\": \"object\",\n  \"properties\": {\"x\": {\"type\": \"integer\"}} }")
	reg := agent.NewRegistry()
	reg.Tool("a", def)
	scribble(def)
	got, err := reg.LookupTool("a")
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"type":"object","properties":{"x":{"type":"integer"}}}`
	if string(got) != want {
		t.Fatalf("LookupTool = %s, want %s", got, want)
	}
	scribble(got)
	if again, _ := reg.LookupTool("a"); string(again) != want {
		t.Errorf("after the caller wrote over its copy, LookupTool = %s", again)
	}
}

// TestCallIsTheActivitys: an activity may write over the call it is
// handed (Raw, Params, Schema) and over a result it handed back. The
// calls after it, the runs after it and the log must not see it.
func TestCallIsTheActivitys(t *testing.T) {
	const def = `{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`
	reg := agent.NewRegistry()
	reg.Tool("inc", json.RawMessage(def))
	scribbling := false
	var seen []string
	var buf []byte // reused by every call, as a pooled encoder would
	reg.Activity("inc", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		var p struct {
			X int `json:"x"`
		}
		if err := json.Unmarshal(c.Params, &p); err != nil {
			return nil, err
		}
		seen = append(seen, string(c.Schema))
		if scribbling {
			scribble(c.Raw)
			scribble(c.Params)
			scribble(c.Schema)
			scribble(buf) // the result handed back before
		}
		buf = fmt.Appendf(buf[:0], `{"y":%d}`, p.X+1)
		return &agent.Result{Value: buf}, nil
	}))
	run := func() []message.Message {
		p := scripted.Solutions(
			`{"calls":[{"_tool":"inc","x":1,"_outputPath":"†state.a"},{"_tool":"inc","x":"†state.a.y","_outputPath":"†state.b"}],"output":null}`,
			`{"calls":[{"_tool":"inc","x":"†state.b.y","_outputPath":"†state.c"}],"output":null}`,
			`{"calls":[],"output":3}`)
		cfg := agent.Config{Provider: p, Registry: reg, Clock: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
		res, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), ctxOf(t, `[{"type":"tool","tool":"inc"}]`))
		if err != nil {
			t.Fatal(err)
		}
		if got := lookup(t, res.Log, "†state.c.y"); got != "4" {
			t.Errorf("state.c.y = %s", got)
		}
		return res.Log.Messages()
	}
	want := run()
	scribbling = true
	got := run()
	scribbling = false
	again := run()
	for _, g := range [][]message.Message{got, again} {
		if !slices.EqualFunc(g, want, func(a, b message.Message) bool { return cmp.Equal(a, b) }) {
			t.Errorf("the log changed with what the activity wrote over (-got +want):\n%s", cmp.Diff(g, want))
		}
	}
	for i, s := range seen {
		if s != def {
			t.Errorf("call %d was handed the schema %s", i, s)
		}
	}
}

// TestJournalKeepsItsCalls writes over each call an event hands to the
// consumer of a durable run: the journal, written after the event, must
// hold the call as the model wrote it.
func TestJournalKeepsItsCalls(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	reg.Activity("t", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`1`)}, nil
	}))
	call := `{"_tool":"t","x":1,"_outputPath":"†state.a"}`
	st := store.NewMemory()
	cfg := agent.Config{Provider: scripted.Solutions(`{"calls":[`+call+`],"output":null}`, `{"calls":[],"output":{}}`),
		Registry: reg, Store: st, RunID: "r"}
	msgs := []message.Message{message.Tool("t"), message.Text("go")}
	for ev, err := range agent.Events(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), msgs) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Call != nil {
			scribble(ev.Call.Raw)
		}
	}
	var started []string
	for e, err := range st.Entries(context.Background(), "r", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == store.EntryStarted {
			started = append(started, string(e.Data))
		}
	}
	if len(started) != 1 || started[0] != call {
		t.Errorf("the journal's started calls: %q, want [%q]", started, call)
	}
}

// TestDefinitionIsTheHandlers writes over the tool definition a message
// handler reads from its Build: neither the registry's definition nor the
// tool message of the log may change.
func TestDefinitionIsTheHandlers(t *testing.T) {
	const def = `{"type":"object","properties":{"x":{"type":"integer"}}}`
	const full = `{"type":"object","properties":{"_tool":{"const":"u"},"y":{"type":"string"}}}`
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(def))
	var schemas []string
	reg.Activity("t", agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
		schemas = append(schemas, string(c.Schema))
		return agent.Value(1)
	}))
	reg.Handle("scribble", agent.HandlerFunc(func(_ context.Context, b *agent.Build, _ *message.Message) error {
		for _, name := range b.Tools() {
			scribble(b.Definition(name))
		}
		return nil
	}))
	msgs := []message.Message{message.Tool("t"), {Type: message.TypeTool, Tool: json.RawMessage(full)}, {Type: "scribble"}}
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, []json.RawMessage{json.RawMessage(`{"_tool":"t","x":1,"_outputPath":"†state.a"}`)}, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) != 1 || schemas[0] != def {
		t.Errorf("the call's schema: %q", schemas)
	}
	if got, _ := reg.LookupTool("t"); string(got) != def {
		t.Errorf("the registry's definition is now %s", got)
	}
	if got := string(res.Log.At(1).Tool); got != full {
		t.Errorf("the log's tool message is now %s", got)
	}
}
