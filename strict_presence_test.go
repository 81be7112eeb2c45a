package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
)

// recordArgs registers tool def with an activity that records its Args.
func recordArgs(reg *agent.Registry, name, def string) func() []string {
	var mu sync.Mutex
	var got []string
	reg.Tool(name, json.RawMessage(def))
	reg.Activity(name, agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
		mu.Lock()
		got = append(got, string(c.Args()))
		mu.Unlock()
		return &agent.Result{Value: []byte(`true`)}, nil
	}))
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

// A rule on which properties are present (if/then: an email needs its
// address) holds on every provider, though a strict OpenAI model writes
// every property: its nulls are the properties left out, and a call that
// leaves the address out is an error of that call, not run with a null.
func TestStrictPresenceRule(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		args := recordArgs(reg, "notify", `{"type":"object","properties":{"kind":{"enum":["email","sms"]},"email":{"type":"string"},"phone":{"type":"string"}},"required":["kind"],
			"if":{"properties":{"kind":{"const":"email"}}},"then":{"required":["email"]},"else":{"required":["phone"]}}`)
		res, _ := strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"notify"}]`, true,
			strictCalls(strict.Call{Tool: "notify", Set: set("kind", `"email"`, "email", `null`, "phone", `null`, "_outputPath", `"†state.n"`)}),
			strictOutput(`{"done":true}`))
		if got := args(); len(got) != 0 {
			t.Errorf("notify ran with %q; want a call error: an email needs its address", got)
		}
		if errs := errorTexts(res.Log); len(errs) != 1 {
			t.Errorf("errors %q, want one", errs)
		}
	})
}

// An optional property typed next to an allOf, which the OpenAI
// adapter merges into one nullable type: a strict OpenAI model leaves it
// out with null, as the schema it was sent allows.
func TestStrictOutputTypedAllOf(t *testing.T) {
	p, srv := strictAdapters[0].start(t, func(*strict.Request, int) (string, error) {
		return `{"output":{"done":true,"color":null}}`, nil
	})
	resp, err := agent.Request(t.Context(), agent.Config{Provider: p, MaxRepairs: -1},
		json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"},"color":{"type":"string","allOf":[{"enum":["red","blue"]}]}},"required":["done"]}`),
		ctxOf(t, `[{"type":"text","text":"Done?"}]`))
	checkStrictServer(t, srv)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Solutions[0].Output); got != `{"done":true}` {
		t.Errorf("output %s", got)
	}
}

// What an activity returns meets its tool's _output as written: a null
// there is a value, not a property a strict model left out.
func TestResultNullRefused(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("who", json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"},"_output":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["age"]}},"required":["id"]}`))
	reg.Activity("who", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`{"name":null,"age":3}`)}, nil
	}))
	res, err := agent.ExecutePlan(t.Context(), agent.Config{Registry: reg},
		[]json.RawMessage{json.RawMessage(`{"_tool":"who","id":"1","_outputPath":"†state.who"}`)}, ctxOf(t, `[{"type":"tool","tool":"who"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if errs := errorTexts(res.Log); len(errs) != 1 {
		t.Errorf("errors %q; state.who = %s; want the result refused: name is a string", errs, strictValue(t, res.Log, "", "†state.who"))
	}
}

// The last solution may call and answer at once: its Raw and Calls
// lose the nulls as the log's plan does.
func TestStrictFinalCallsAbsent(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		recordArgs(reg, "seen", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"]}`)
		res, _ := strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"seen"}]`, false,
			func(s json.RawMessage) (json.RawMessage, error) {
				return strict.Solution(s, json.RawMessage(`{"done":true}`), strict.Call{Tool: "seen", Set: set("a", `"s"`, "b", `null`, "_outputPath", `"†state.seen"`)})
			})
		if strings.Contains(string(res.Solution.Raw), "null") {
			t.Errorf("Raw keeps nulls: %s", res.Solution.Raw)
		}
		for _, c := range res.Solution.Calls {
			if strings.Contains(string(c), "null") {
				t.Errorf("Calls keep nulls: %s", c)
			}
		}
	})
}

// An advisor's opinion loses the nulls of what it left out, as the
// solution's advisors do.
func TestStrictAdviceAbsent(t *testing.T) {
	a := strictAdapters[0] // only strict OpenAI writes them
	reg := agent.NewRegistry()
	recordArgs(reg, "deploy", `{"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"]}`)
	ctx := `[{"type":"tool","tool":"deploy"},{"type":"advisor","id":"risk","on":"request","role":"Analyze risks.",
		"schema":{"type":"object","properties":{"thought":{"type":"string"},"caveat":{"type":"string"}},"required":["thought"]}}]`
	res, _ := strictRun(t, a, reg, `{"type":"object","properties":{"status":{"type":"string"}},"required":["status"]}`, ctx, false,
		withAdvice(`[{"id":"risk","thought":"fine","caveat":null,"calls":"{\"deploy\":1}"}]`, strict.Call{Tool: "deploy", Set: set("reason", `"go"`, "_outputPath", `"†state.d"`)}),
		withAdviceOutput(`[{"id":"risk","thought":"done","caveat":null,"calls":"{}"}]`, `{"status":"ok"}`))
	if sol := string(res.Solution.Field("advisors")); strings.Contains(sol, "null") {
		t.Fatalf("the solution keeps nulls: %s", sol)
	}
	for _, op := range res.Advice {
		if strings.Contains(string(op.Raw), "null") {
			t.Errorf("RunResult.Advice keeps the null of what the advisor left out: %s", op.Raw)
		}
	}
}

func withAdviceOutput(advisors, output string) strictStep {
	return func(s json.RawMessage) (json.RawMessage, error) {
		sol, err := withAdvice(advisors)(s)
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sol, &m); err != nil {
			return nil, err
		}
		m["output"] = json.RawMessage(output)
		return json.Marshal(m)
	}
}

// A tool that takes either an id or a name runs on every provider: the
// alternatives go to its description (OpenAI and Anthropic close every
// object, and no value fit), and the call is checked against them here.
// Giving neither is an error of the call.
func TestStrictEitherOr(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		args := recordArgs(reg, "find", `{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},"oneOf":[{"required":["id"]},{"required":["name"]}]}`)
		res, _ := strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"find"}]`, true,
			strictCalls(
				strict.Call{Tool: "find", Set: set("id", `"u1"`, "name", `null`, "_outputPath", `"†state.a"`)},
				strict.Call{Tool: "find", Set: set("id", `null`, "name", `null`, "_outputPath", `"†state.b"`)}),
			strictOutput(`{"done":true}`))
		if got := args(); len(got) != 1 || got[0] != `{"id":"u1"}` {
			t.Errorf("find ran with %q, want once with the id alone", got)
		}
		if errs := errorTexts(res.Log); len(errs) != 1 {
			t.Errorf("errors %q, want one: the call that gave neither", errs)
		}
	})
}

// A call that gives neither id nor name is told what it left out, not
// that it gave both.
func TestStrictEitherOrNeitherMessage(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		recordArgs(reg, "find", `{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},"oneOf":[{"required":["id"]},{"required":["name"]}]}`)
		res, _ := strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"find"}]`, true,
			strictCalls(strict.Call{Tool: "find", Set: set("id", `null`, "name", `null`, "_outputPath", `"†state.b"`)}),
			strictOutput(`{"done":true}`))
		errs := errorTexts(res.Log)
		if len(errs) != 1 || strings.Contains(errs[0], "matches alternatives 0 and 1") {
			t.Errorf("errors %q: the call gave neither id nor name", errs)
		}
	})
}

// A union whose cases carry their own properties (card for a card, iban
// for a bank transfer) can be called: the model can write a case.
func TestStrictUnionCases(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		if a.name == "gemini-json" {
			t.Skip("the fake's generator reads only top-level properties")
		}
		reg := agent.NewRegistry()
		args := recordArgs(reg, "pay", `{"type":"object","properties":{"method":{"enum":["card","bank"]}},"required":["method"],
			"oneOf":[{"properties":{"method":{"const":"card"},"card":{"type":"string"}},"required":["card"]},
			         {"properties":{"method":{"const":"bank"},"iban":{"type":"string"}},"required":["iban"]}]}`)
		strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"pay"}]`, false,
			strictCalls(strict.Call{Tool: "pay", Set: set("method", `"card"`, "card", `"4111"`, "iban", `null`, "_outputPath", `"†state.p"`)}),
			strictOutput(`{"done":true}`))
		// The card case does not say iban, but the null a strict OpenAI
		// model writes for it stands for its absence all the same.
		want := `{"method":"card","card":"4111"}`
		if got := args(); len(got) != 1 || got[0] != want {
			t.Errorf("pay ran with %q, want %s", got, want)
		}
	})
}
