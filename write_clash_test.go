package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/store"
)

// A call whose result does not combine with the value its _outputPath
// lands on (a push onto an object) fails, with an error that says where
// and shows the result; the value stays as it was and the run goes on.
// Appending the write would break every later read of that value: the
// run's next request, and a resume of it, which would fail the same way.
func TestWriteClashFailsTheCall(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`)
	answers := []string{
		`{"calls":[{"_tool":"put","v":{"a":1},"_outputPath":"†state.obj"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":[2,3],"_outputPath":"†state.obj","_outputMethod":"push"},{"_tool":"put","v":4,"_outputPath":"†state.list","_outputMethod":"push"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`,
	}
	st := store.NewMemory()
	p := scripted.Solutions(answers...)
	cfg := agent.Config{Registry: echoReg(), Provider: p, Store: st, RunID: "clash", Clock: fixed}
	var failed []error
	var res *agent.RunResult
	for ev, err := range agent.Events(context.Background(), cfg, anyOut, msgs) {
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		switch ev.Kind {
		case agent.EventCallFailed:
			failed = append(failed, ev.Err)
		case agent.EventDone:
			res = ev.Result
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0].Error(), "push onto an object") || !strings.Contains(failed[0].Error(), "†state.obj") ||
		!strings.Contains(failed[0].Error(), "[2,3]") {
		t.Fatalf("failed calls: %v; want the push onto †state.obj, with its result", failed)
	}
	if got := stateOf(t, res.Log); got != `{"list":[4],"obj":{"a":1}}` {
		t.Errorf("state %s", got)
	}
	reqs := p.Requests()
	last := reqs[len(reqs)-1].Messages
	if tail := last[len(last)-1].Text; !strings.Contains(tail, "push onto an object") {
		t.Errorf("the model is not told: %q", tail)
	}
	sameLog(t, st, "clash", res.Log)
	if again, err := agent.Resume(context.Background(), agent.Config{Registry: echoReg(), Store: st}, "clash"); err != nil || again.Solution == nil {
		t.Errorf("the run's result again: %v", err)
	}
	if v, err := ref.EvalString(res.Log, "†state.obj.a"); err != nil || string(v) != "1" {
		t.Errorf("†state.obj.a = %s, %v", v, err)
	}

	// The same in a plan, where a failure branch takes the error (one
	// call at a time: the second runs after the first).
	plan := []json.RawMessage{
		json.RawMessage(`{"_tool":"put","v":"text","_outputPath":"†state.s"}`),
		json.RawMessage(`{"_tool":"put","v":1,"_outputPath":"†state.s || †state.problem","_outputMethod":"push"}`),
	}
	pres, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: echoReg(), Clock: fixed, Concurrency: 1}, plan, msgs)
	if err != nil {
		t.Fatal(err)
	}
	problem, err := ref.EvalString(pres.Log, "†state.problem")
	if err != nil || !strings.Contains(string(problem), "push onto a string") {
		t.Errorf("†state.problem = %s, %v", problem, err)
	}
	if s, err := ref.EvalString(pres.Log, "†state.s"); err != nil || string(s) != `"text"` {
		t.Errorf("†state.s = %s, %v", s, err)
	}
	for _, m := range pres.Log.Messages() {
		if m.Type == message.TypeData && m.OutputPath != "" && strings.HasPrefix(m.OutputPath, "†state.s") && m.Method == "push" {
			t.Errorf("the clashing write is in the log: %+v", m)
		}
	}
}

// Writes of one call through && to places that clash among themselves (a
// string, then a key inside it) fail the call as a clash with the log
// does: each output is checked as the ones before it leave the value.
func TestWriteClashAmongOutputs(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`)
	for _, tt := range []struct{ pre, want string }{{"", ""}, {`{"_tool":"put","v":1,"_outputPath":"†state.z"}`, `{"z":1}`}} {
		plan := []json.RawMessage{}
		if tt.pre != "" {
			plan = append(plan, json.RawMessage(tt.pre))
		}
		plan = append(plan, json.RawMessage(`{"_tool":"put","v":"text","_outputPath":"†state.a && †state.a.b"}`))
		res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: echoReg(), Clock: fixed, Concurrency: 1}, plan, msgs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ref.EvalString(res.Log, "†state"); err != nil && !errors.Is(err, ref.ErrNotFound) {
			t.Fatalf("the clash is in the log: †state: %v", err)
		}
		if got := stateOf(t, res.Log); got != tt.want {
			t.Errorf("state %s, want %s", got, tt.want)
		}
		if errs := planErrors(res.Log); len(errs) != 1 || !strings.Contains(errs[0], "†state.a.b") || !strings.Contains(errs[0], "into a string") {
			t.Errorf("errors %q; want the call's clash at †state.a.b", errs)
		}
	}
}
