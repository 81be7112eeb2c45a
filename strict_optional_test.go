package agent_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/message"
)

// findParams has optional parameters, at the top and inside a list.
type findParams struct {
	X       int         `json:"x"`
	Note    string      `json:"note,omitempty"`
	Filters []findRange `json:"filters,omitempty"`
}

type findRange struct {
	From int  `json:"from"`
	To   *int `json:"to,omitempty"`
}

// A strict OpenAI model must write every property, null for the ones it
// leaves out. A tool made from a Go type with optional fields still runs:
// its code gets the parameters without those nulls, as the type's schema
// says them. The other providers leave such properties out.
func TestStrictOptionalParams(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		var got findParams
		var args string
		reg.Activity("seen", agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
			args = string(c.Args())
			return &agent.Result{Value: []byte(`true`)}, nil
		}))
		reg.Tool("seen", []byte(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"]}`))
		err := agent.Func(reg, "lookup", "Looks x up.", func(_ context.Context, p findParams) (int, error) {
			got = p
			return p.X + 1, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"lookup"},{"type":"tool","tool":"seen"}]`, false,
			strictCalls(
				strict.Call{Tool: "lookup", Set: set("x", `1`, "note", `null`, "filters", `[{"from":1,"to":null},{"from":2,"to":3}]`, "_outputPath", `"†state.y"`)},
				strict.Call{Tool: "seen", Set: set("a", `"s"`, "b", `null`, "_outputPath", `"†state.seen"`)}),
			strictOutput(`{"done":true}`))
		three := 3
		if want := (findParams{X: 1, Filters: []findRange{{From: 1}, {From: 2, To: &three}}}); !reflect.DeepEqual(got, want) {
			t.Errorf("the Func got %+v, want %+v", got, want)
		}
		if args != `{"a":"s"}` {
			t.Errorf("the activity's Args = %s, want the optional b left out", args)
		}
	})
}

// RequestAs decodes what a strict OpenAI model writes for a Go type with
// optional fields: null for each it leaves out.
func TestStrictRequestAsOptional(t *testing.T) {
	type weather struct {
		City string   `json:"city"`
		Note string   `json:"note,omitempty"`
		High *float64 `json:"high,omitempty"`
	}
	p, srv := strictAdapters[0].start(t, func(*strict.Request, int) (string, error) {
		return `{"output":{"city":"Paris","note":null,"high":null}}`, nil
	})
	got, _, err := agent.RequestAs[weather](t.Context(), agent.Config{Provider: p, MaxRepairs: -1}, ctxOf(t, `[{"type":"text","text":"Weather?"}]`))
	checkStrictServer(t, srv)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Value != (weather{City: "Paris"}) {
		t.Errorf("RequestAs = %+v", got)
	}
}

// What a strict OpenAI model writes for the properties it leaves out does
// not outlive the answer: the run's output and the calls the next request
// shows the model (tokens in every request after) are as the schemas say
// them, without the nulls.
func TestStrictAbsentNotKept(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		err := agent.Func(reg, "lookup", "Looks x up.", func(_ context.Context, p findParams) (int, error) { return p.X + 1, nil })
		if err != nil {
			t.Fatal(err)
		}
		output := `{"done":true,"why":null,"steps":[{"n":1,"label":null}]}`
		if a.name != "openai" {
			output = `{"done":true,"steps":[{"n":1}]}` // the others leave out what is optional
		}
		res, m := strictRunIn(t, a, a.field, true, reg,
			`{"type":"object","properties":{"done":{"type":"boolean"},"why":{"type":"string"},"steps":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"},"label":{"type":"string"}},"required":["n"]}}},"required":["done"]}`,
			`[{"type":"tool","tool":"lookup"}]`, false,
			strictCalls(strict.Call{Tool: "lookup", Set: set("x", `1`, "note", `null`, "filters", `[{"from":1,"to":null}]`,
				"_outputPath", `"†state.y"`, "_outputMethod", `null`)}),
			strictOutput(output))
		if got, want := string(res.Solution.Output), `{"done":true,"steps":[{"n":1}]}`; got != want {
			t.Errorf("Output = %s, want %s", got, want)
		}
		if strings.Contains(string(res.Solution.Raw), "null") {
			t.Errorf("Raw keeps nulls: %s", res.Solution.Raw)
		}
		for _, msg := range res.Log.Messages() {
			if strings.Contains(string(msg.Plan)+string(msg.Call), "null") {
				t.Errorf("the log keeps a call with nulls: %s%s", msg.Plan, msg.Call)
			}
		}
		if n := len(m.sent); n != 2 {
			t.Fatalf("%d requests, want 2", n)
		}
	})
}

// A model outside strict mode may write null for a meta-property its tool
// is not offered (_scopes of a tool without scopes, _instance in a context
// without instances), as strict models write for the ones offered. It
// means none, and the plan and the _call every later request shows say
// only what the model chose.
func TestMetaNullsNotKept(t *testing.T) {
	msgs := ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"text","text":"go"}]`)
	res, reqs := runLoop(t, agent.Config{Registry: echoReg(), Concurrency: 1}, msgs,
		`{"calls":[{"_tool":"put","v":1,"_scopes":null,"_instance":null,"_outputMethod":null,"_outputPath":"†state.n"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	want := `{"_tool":"put","v":1,"_outputPath":"†state.n"}`
	for _, m := range res.Log.Messages() {
		switch {
		case m.Type == message.TypePlan && string(m.Plan) != "["+want+"]":
			t.Errorf("plan %s, want [%s]", m.Plan, want)
		case m.Call != nil && string(m.Call) != want:
			t.Errorf("_call %s, want %s", m.Call, want)
		}
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1].Text; strings.Contains(last, "_scopes") || strings.Contains(last, "_instance") {
		t.Errorf("the next request shows %s", last)
	}
}
