package agent_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
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
