package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/schema"
)

// Page 103: an Ideator whose input schema and output schema have
// definitions of their own ($defs, as schema.For or an exported zod or
// pydantic model makes them). Its tool's parameters are that input
// schema, its _output the Idea's schema: their refs must resolve in the
// tool, and each adapter's strict provider must take it.
func TestStrictIdeatorDefinitions(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"object","$defs":{"R":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}},"properties":{"r":{"$ref":"#/$defs/R"}},"required":["r"]},
			"context":[{"type":"system","message":"You send messages."},
			{"type":"input","schema":{"type":"object","$defs":{"Who":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}},"properties":{"to":{"$ref":"#/$defs/Who"},"body":{"type":"string"}},"required":["to"]}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Ideator("speaker", idea); err != nil {
			t.Fatal(err)
		}
		res, m := strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"speaker"},{"type":"text","role":"user","text":"Greet u1."}]`, false,
			strictCalls(strict.Call{Tool: "speaker", Set: set("to", `{"id":"u1"}`, "body", `"Hi"`, "_outputPath", `"†state.sent"`)}),
			strictOutput(`{"done":true}`))
		if got := strictValue(t, res.Log, "", "†state.sent.r.ok"); got != "true" {
			t.Errorf("state.sent = %s", strictValue(t, res.Log, "", "†state.sent"))
		}
		_, tasks := m.taken()
		if len(tasks) != 1 || !strings.Contains(tasks[0], `{"body":"Hi","to":{"id":"u1"}}`) {
			t.Errorf("the delegate's request: %q", tasks)
		}
	})
}

// An Ideator whose input and output are a recursive type (schema.For
// makes the root a ref to itself): the tool refers to the input's
// definition, and the delegate answers with the tree. Recursion sends the
// schema as in TestStrictRecursiveTool.
func TestStrictIdeatorRecursive(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		outline := string(schema.For[outlineSection]())
		idea, err := agent.ParseIdea([]byte(`{"schema":` + outline + `,"context":[{"type":"system","message":"You expand outlines."},{"type":"input","schema":` + outline + `}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Ideator("expand", idea); err != nil {
			t.Fatal(err)
		}
		field, isStrict := a.field, true
		switch a.name {
		case "anthropic":
			field, isStrict = "tools/solution", false
		case "gemini":
			field = "responseJsonSchema"
		}
		// The delegate's model answers with a tree of its own: an example
		// of a recursive schema would not end.
		steps := &strictModel{steps: []strictStep{
			strictCalls(strict.Call{Tool: "expand", Set: set("title", `"a"`, "sections", `[{"title":"b","sections":null}]`, "_outputPath", `"†state.outline"`)}),
			strictOutput(`{"done":true}`)}}
		var sub []string
		answer := func(req *strict.Request, n int) (string, error) {
			if _, err := strict.Property(req.Schema, "calls"); err != nil {
				sub = append(sub, req.Text())
				return `{"output":{"title":"A","sections":[{"title":"B","sections":null}]}}`, nil
			}
			return steps.answer(req, n)
		}
		p, srv := a.start(t, answer)
		res, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, Concurrency: 1, MaxRepairs: -1, Clock: fixedClock},
			json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`),
			ctxOf(t, `[{"type":"tool","tool":"expand"},{"type":"text","role":"user","text":"Expand it."}]`))
		checkStrictServer(t, srv)
		for _, req := range srv.Requests() {
			if req.Field != field || req.Strict != isStrict {
				t.Errorf("the adapter sent its schema in %q (strict %v), want %q (strict %v)", req.Field, req.Strict, field, isStrict)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errorTexts(res.Log) {
			t.Errorf("error message: %s", e)
		}
		if len(sub) != 1 || !strings.Contains(sub[0], `{"sections":[{"title":"b"}],"title":"a"}`) {
			t.Errorf("the delegate's request: %q", sub)
		}
		if got := strictValue(t, res.Log, "", "†state.outline"); got != `{"sections":[{"title":"B"}],"title":"A"}` {
			t.Errorf("state.outline = %s", got)
		}
	})
}
