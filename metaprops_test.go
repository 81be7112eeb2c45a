package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/schema"
)

// TestComposedCallsOfferTheMetaProperties checks what each call item of
// the composed schema offers: _reasoningForCall first, _tool, the
// parameters, _outputPath, _outputMethod, and _instance only when the
// context has instances, as an enum of them. The tools share the schemas
// of the meta-properties: each is written once, in the root's $defs.
func TestComposedCallsOfferTheMetaProperties(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("put", json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}`))
	reg.Tool("get", json.RawMessage(`{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]}`))
	compose := func(ctx string) (sent, inlined string) {
		p := scripted.Solutions(`{"calls":[],"output":{}}`)
		if _, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), ctxOf(t, ctx)); err != nil {
			t.Fatal(err)
		}
		s := p.Requests()[0].Schema
		in, err := schema.InlineLocal(s)
		if err != nil {
			t.Fatalf("%v:\n%s", err, s)
		}
		return string(s), string(in)
	}
	sent, plain := compose(`[{"type":"tool","tool":"put"},{"type":"tool","tool":"get"}]`)
	for _, want := range []string{`"properties":{"_reasoningForCall":{"type":"string"`, `"_tool":{"const":"put"}`, `"_tool":{"const":"get"}`,
		`"v":{"anyOf":[{"type":"integer"},{"type":"string","pattern":"^†[A-Za-z0-9_-]+.*$"`,
		`"_outputMethod":{"enum":["set","merge","assign","push","concat"]`, `"_outputPath":{"type":"string","pattern":"^†.*$"`} {
		if !strings.Contains(plain, want) {
			t.Errorf("the composed schema lacks %s:\n%s", want, plain)
		}
	}
	for _, once := range []string{"Why this call", "A reference †kind.path", "Where to write the result", "How the result combines"} {
		if n := strings.Count(sent, once); n != 1 {
			t.Errorf("%q is written %d times in the composed schema, want once:\n%s", once, n, sent)
		}
	}
	if strings.Contains(sent, "_instance") {
		t.Errorf("_instance is offered with no instance in the context:\n%s", sent)
	}
	sent, instanced := compose(`[{"type":"tool","tool":"put"},{"type":"tool","tool":"get"},{"type":"data","kind":"input","_instance":"a","data":{}},{"type":"data","kind":"input","_instance":"b","data":{}}]`)
	if strings.Count(instanced, `"_instance":{"enum":["a","b"]`) != 2 || strings.Count(sent, `"enum":["a","b"]`) != 1 {
		t.Errorf("the instances are not offered to each tool, once:\n%s", sent)
	}
}

// TestStrictCallsRun runs calls as a strict structured-output mode writes
// them: every meta-property present, those not used null. Each is read as
// the pages say, and a null is the property left out.
func TestStrictCallsRun(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("put", json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"],"additionalProperties":false}`))
	reg.Activity("put", agent.Bind(func(ctx context.Context, p struct {
		V int `json:"v"`
	}) (int, error) {
		return p.V, nil
	}))
	reg.Tool("guess", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"_output":{"type":"integer"}}}`))
	answers := []string{
		`{"calls":[` +
			`{"_reasoningForCall":"start the list","_tool":"put","v":1,"_outputPath":"†state.list","_outputMethod":"push","_instance":null},` +
			`{"_reasoningForCall":null,"_tool":"put","v":2,"_outputPath":"†state.n","_outputMethod":null,"_instance":"i1"},` +
			`{"_reasoningForCall":"latent, inline","_tool":"guess","q":"x","_output":7,"_outputPath":"†state.g","_outputMethod":null,"_instance":null}],"output":null}`,
		`{"calls":[{"_reasoningForCall":"add","_tool":"put","v":3,"_outputPath":"†state.list","_outputMethod":"push","_instance":null}],"output":null}`,
		`{"calls":[],"output":{}}`}
	p := scripted.Solutions(answers...)
	msgs := ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"tool","tool":"guess"},{"type":"data","kind":"state","data":{"list":[]}},{"type":"data","kind":"state","_instance":"i1","data":{}}]`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Concurrency: 1}, json.RawMessage(`{"type":"object"}`), msgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Log.Messages() {
		if m.Type == message.TypeError {
			t.Errorf("error: %s", m.Error)
		}
	}
	// The answers are what OpenAI's strict mode allows of the composed
	// schema: its dialect requires every property, optional ones nullable.
	strict, err := schema.Adapt(p.Requests()[0].Schema, schema.OpenAI)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := schema.Compile(strict)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := compiled.Validate(json.RawMessage(answers[i])); err != nil {
			t.Errorf("answer %d breaks the strict schema: %v", i+1, err)
		}
	}
	for expr, want := range map[string]string{"†state.list": "[1,3]", "†state.g": "7"} {
		if got := lookup(t, res.Log, expr); got != want {
			t.Errorf("%s = %s, want %s", expr, got, want)
		}
	}
	if v, err := res.Log.Instance("i1").Lookup("state", []string{"n"}); err != nil || string(v) != "2" {
		t.Errorf("instance i1 state.n = %s, %v", v, err)
	}
	if _, err := res.Log.Lookup("state", []string{"n"}); err == nil {
		t.Error("the instanced write reached the global state")
	}
}

// TestLazyRequestsOfferNoOutput checks that a request that only plans
// (012, lazy mode) offers no tool an _output, which would have the model
// produce the result it was told not to.
func TestLazyRequestsOfferNoOutput(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("guess", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"_output":{"type":"integer"}}}`))
	msgs := ctxOf(t, `[{"type":"tool","tool":"guess"},{"type":"text","text":"plan"}]`)
	p := scripted.Solutions(`{"calls":[{"_tool":"guess","q":"x","_outputPath":"†state.g"}],"output":null}`)
	if _, _, err := agent.Plan(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), msgs); err != nil {
		t.Fatal(err)
	}
	if s := string(p.Requests()[0].Schema); strings.Contains(s, "_output\"") {
		t.Errorf("a lazy request offers _output:\n%s", s)
	}
	loop := scripted.Solutions(`{"calls":[{"_tool":"guess","q":"x","_outputPath":"†state.g"}],"output":null}`)
	lazy := append(msgs, message.Message{Type: message.TypePlan, Plan: json.RawMessage(`[]`), Extra: json.RawMessage(`{"mode":"lazy"}`)})
	if _, err := agent.Run(context.Background(), agent.Config{Provider: loop, Registry: reg}, json.RawMessage(`{"type":"object"}`), lazy); err != nil {
		t.Fatal(err)
	}
	if s := string(loop.Requests()[0].Schema); strings.Contains(s, "_output\"") {
		t.Errorf("a lazy loop offers _output:\n%s", s)
	}
	eager := scripted.Solutions(`{"calls":[],"output":{}}`)
	if _, err := agent.Request(context.Background(), agent.Config{Provider: eager, Registry: reg}, json.RawMessage(`{"type":"object"}`), msgs); err != nil {
		t.Fatal(err)
	}
	if s := string(eager.Requests()[0].Schema); !strings.Contains(s, `"_output":{"type":"integer"}`) {
		t.Errorf("an eager request lost the latent tool's _output:\n%s", s)
	}
}
