package agent_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
)

// A context of twelve tools with optional parameters composes a schema
// beyond Anthropic's limits on one request's strict schemas (24 optional,
// 16 union-typed properties). Each adapter still gets the run through:
// Anthropic's sends it as a forced tool that is not strict, the others
// strict; the calls come back executed.
func TestStrictManyTools(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := agent.NewRegistry(), &strictRecorder{}
		var msgs []string
		for i := range 12 {
			name := fmt.Sprintf("lookup%d", i)
			reg.Tool(name, json.RawMessage(`{"type":"object","description":"Looks up a record.","properties":{
				"id":{"type":"string"},"limit":{"type":"integer"},"since":{"type":"string","format":"date"},
				"filter":{"type":["string","null"]}},"required":["id"]}`))
			rec.activity(reg, name, func(c *agent.Call) (json.RawMessage, error) {
				return json.RawMessage(`{"found":` + argString(c, "id") + `}`), nil
			})
			msgs = append(msgs, `{"type":"tool","tool":"`+name+`"}`)
		}
		msgs = append(msgs, `{"type":"text","text":"Look up r1 and r2."}`)
		m := &strictModel{steps: []strictStep{
			strictCalls(strict.Call{Tool: "lookup3", Set: set("id", `"r1"`, "since", `"2026-01-02"`, "_outputPath", `"†state.r1"`)},
				strict.Call{Tool: "lookup11", Set: set("id", `"r2"`, "limit", `5`, "since", `"2026-01-02"`, "_outputPath", `"†state.r2"`)}),
			strictOutput(`{"done":true}`),
		}}
		p, srv := a.start(t, m.answer)
		cfg := agent.Config{Provider: p, Registry: reg, Concurrency: 1, MaxRepairs: -1, Clock: fixedClock}
		res, err := agent.Run(t.Context(), cfg, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`),
			ctxOf(t, "["+strings.Join(msgs, ",")+"]"))
		checkStrictServer(t, srv)
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range srv.Requests() {
			if wantStrict := a.name != "anthropic"; req.Strict != wantStrict {
				t.Errorf("sent in %q with strict %v, want strict %v", req.Field, req.Strict, wantStrict)
			}
		}
		for _, e := range errorTexts(res.Log) {
			t.Errorf("error message: %s", e)
		}
		if got := strictValue(t, res.Log, "", "†state.r1"); got != `{"found":"r1"}` {
			t.Errorf("state.r1 = %s", got)
		}
		if got := strictValue(t, res.Log, "", "†state.r2"); got != `{"found":"r2"}` {
			t.Errorf("state.r2 = %s", got)
		}
		if n := len(rec.of("lookup11")); n != 1 {
			t.Errorf("lookup11 ran %d times", n)
		}
		if string(res.Solution.Output) != `{"done":true}` {
			t.Errorf("output %s", res.Solution.Output)
		}
	})
}

// A tool's parameters and the output may name registered schemas
// ({"$ref":"City"}). The provider cannot see the registry, so the schema
// it gets has them bundled into $defs.
func TestStrictNamedRefs(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := agent.NewRegistry(), &strictRecorder{}
		reg.Schemas().Register("City", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"country":{"type":"string"}},"required":["name","country"]}`))
		reg.Tool("forecast", json.RawMessage(`{"type":"object","properties":{"city":{"$ref":"City"}},"required":["city"]}`))
		rec.activity(reg, "forecast", func(c *agent.Call) (json.RawMessage, error) {
			return json.RawMessage(`{"sky":"clear"}`), nil
		})
		res, m := strictRun(t, a, reg, `{"type":"object","properties":{"city":{"$ref":"City"}},"required":["city"]}`,
			`[{"type":"tool","tool":"forecast"},{"type":"text","text":"Weather in Paris?"}]`, false,
			strictCalls(strict.Call{Tool: "forecast", Set: set("city", `{"name":"Paris","country":"FR"}`, "_outputPath", `"†state.sky"`)}),
			strictOutput(`{"city":{"name":"Paris","country":"FR"}}`))
		if strings.Contains(string(m.schemas()[0]), `"City"`) && !strings.Contains(string(m.schemas()[0]), `$defs`) && a.name != "gemini" {
			t.Errorf("the schema sent names City without defining it: %s", m.schemas()[0])
		}
		if calls := rec.of("forecast"); len(calls) != 1 || argString(calls[0], "city") != `{"name":"Paris","country":"FR"}` {
			t.Errorf("forecast calls %v", calls)
		}
		if string(res.Solution.Output) != `{"city":{"name":"Paris","country":"FR"}}` {
			t.Errorf("output %s", res.Solution.Output)
		}
	})
}

// A tool definition may keep its own definitions ("$defs") and refer to
// them ("#/$defs/Point"). Inside the composed schema "#" is no longer the
// definition's root, so the tool's local refs are inlined when it is
// shaped; the calls come back executed through each strict adapter.
func TestStrictToolLocalRefs(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg, rec := agent.NewRegistry(), &strictRecorder{}
		reg.Tool("plot", json.RawMessage(`{"type":"object","properties":{"at":{"$ref":"#/$defs/Point"}},"required":["at"],
			"$defs":{"Point":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"]}}}`))
		rec.activity(reg, "plot", func(c *agent.Call) (json.RawMessage, error) { return json.RawMessage(`"plotted"`), nil })
		strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"plot"},{"type":"text","text":"Plot (1, 2)."}]`, false,
			strictCalls(strict.Call{Tool: "plot", Set: set("at", `{"x":1,"y":2}`, "_outputPath", `"†state.p"`)}),
			strictOutput(`{"done":true}`))
		if calls := rec.of("plot"); len(calls) != 1 || argString(calls[0], "at") != `{"x":1,"y":2}` {
			t.Errorf("plot calls %v", calls)
		}
	})
}
