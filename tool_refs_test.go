package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/schema"
)

// treeNode is a recursive Go type, as parameters and as a result.
type treeNode struct {
	Name     string     `json:"name"`
	Children []treeNode `json:"children,omitempty"`
}

// A Go type that refers to itself keeps its recursion in the tool: "#"
// would mean the whole tool, _output included, so the type becomes a
// definition of the tool's $defs, named after it, and the composed
// schema holds it once, named after the tool.
func TestFuncRecursiveType(t *testing.T) {
	reg := agent.NewRegistry()
	var got treeNode
	err := agent.Func(reg, "mirror", "Mirrors a tree.", func(_ context.Context, n treeNode) (treeNode, error) {
		got = n
		n.Name = strings.ToUpper(n.Name)
		return n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	def, _ := reg.LookupTool("mirror")
	for _, want := range []string{`"items":{"$ref":"#/$defs/treeNode"}`, `"_output":{"$ref":"#/$defs/treeNode"}`, `"$defs":{"treeNode":{"type":"object"`} {
		if !strings.Contains(string(def), want) {
			t.Errorf("the definition lacks %s:\n%s", want, def)
		}
	}
	if strings.Contains(string(def), `"$ref":"#"`) {
		t.Errorf("the definition refers to its root, which is the tool:\n%s", def)
	}
	offer, _ := reg.Offer()
	p := scripted.Solutions(
		`{"calls":[{"_tool":"mirror","name":"a","children":[{"name":"b","children":[{"name":"c"}]}],"_outputPath":"†state.m"},`+
			`{"_tool":"mirror","name":"x","children":[{"name":1}]}],"output":null}`,
		`{"calls":[],"output":{}}`)
	res, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, Concurrency: 1}, json.RawMessage(`{"type":"object"}`), []message.Message{offer})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "a" || len(got.Children) != 1 || got.Children[0].Children[0].Name != "c" {
		t.Errorf("the function got %+v", got)
	}
	if v := strictValue(t, res.Log, "", "†state.m.name"); v != `"A"` {
		t.Errorf("state.m.name = %s", v)
	}
	errs := errorTexts(res.Log)
	if len(errs) != 1 || !strings.Contains(errs[0], "/children/0/name") {
		t.Errorf("errors %q, want one at /children/0/name", errs)
	}
	s := string(p.Requests()[0].Schema)
	if strings.Count(s, `"mirror.treeNode":{`) != 1 || !strings.Contains(s, `"items":{"$ref":"#/$defs/mirror.treeNode"}`) {
		t.Errorf("the composed schema should hold the type once, as mirror.treeNode:\n%s", s)
	}
	if _, err := schema.Compile(p.Requests()[0].Schema); err != nil {
		t.Errorf("the composed schema does not compile: %v", err)
	}
}

// Tools' definitions go to the composed schema's root named after their
// tool, so two tools' "item" stay apart; only what a tool refers to goes;
// a tool that refers to its own root is itself that definition.
func TestToolDefinitionsInComposedSchema(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("a", json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/item"},"y":{"$ref":"#/properties/x"}},"required":["x"],"$defs":{"item":{"type":"string"},"unused":{"type":"number"}}}`))
	reg.Tool("b", json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/item"},"next":{"$ref":"#"}},"required":["x"],"$defs":{"item":{"type":"integer"}}}`))
	for _, n := range []string{"a", "b"} {
		reg.Activity(n, agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
			return &agent.Result{Value: c.Args()}, nil
		}))
	}
	offer, _ := reg.Offer()
	p := scripted.Solutions(
		`{"calls":[{"_tool":"a","x":"s","y":"t"},{"_tool":"b","x":1,"next":{"x":2,"next":{"x":3}}},{"_tool":"a","x":1},{"_tool":"b","x":1,"next":{"x":"no"}}],"output":null}`,
		`{"calls":[],"output":{}}`)
	res, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, Concurrency: 1}, json.RawMessage(`{"type":"object"}`), []message.Message{offer})
	if err != nil {
		t.Fatal(err)
	}
	s := string(p.Requests()[0].Schema)
	for _, want := range []string{`"a.item":{"type":"string"}`, `"a.properties.x":`, `"b.item":{"type":"integer"}`, `"b":{`, `{"$ref":"#/$defs/b"}`} {
		if !strings.Contains(s, want) {
			t.Errorf("the composed schema lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, "unused") {
		t.Errorf("a definition nothing refers to was sent:\n%s", s)
	}
	errs := errorTexts(res.Log)
	if len(errs) != 2 || !strings.Contains(errs[0], "/x") || !strings.Contains(errs[1], "/next/next/x") && !strings.Contains(errs[1], "/next/x") {
		t.Errorf("errors %q, want the third call's /x and the fourth's /next/x", errs)
	}
}

// A latent tool whose _output is recursive is asked for it with its
// definitions: the request a latent call makes stands on its own.
func TestLatentRecursiveOutput(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("outline", json.RawMessage(`{"type":"object","description":"Outlines a topic.","properties":{"topic":{"type":"string"},"_output":{"$ref":"#/$defs/section"}},"required":["topic"],`+
		`"$defs":{"section":{"type":"object","properties":{"title":{"type":"string"},"sections":{"type":"array","items":{"$ref":"#/$defs/section"}}},"required":["title"]}}}`))
	offer, _ := reg.Offer()
	p := scripted.Solutions(
		`{"calls":[{"_tool":"outline","topic":"go","_outputPath":"†state.o"}],"output":null}`,
		`{"output":{"title":"Go","sections":[{"title":"Types","sections":[]}]}}`,
		`{"calls":[],"output":{}}`)
	res, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), []message.Message{offer})
	if err != nil {
		t.Fatal(err)
	}
	if errs := errorTexts(res.Log); len(errs) > 0 {
		t.Errorf("errors %q", errs)
	}
	if v := strictValue(t, res.Log, "", "†state.o.sections.0.title"); v != `"Types"` {
		t.Errorf("state.o.sections.0.title = %s", v)
	}
	latent := string(p.Requests()[1].Schema)
	if !strings.Contains(latent, `outline.section":{"type":"object"`) {
		t.Errorf("the latent request's schema lacks the definition:\n%s", latent)
	}
}

// treeDoc is not recursive, but holds a type that is.
type treeDoc struct {
	Title string   `json:"title"`
	Root  treeNode `json:"root"`
}

// A Func whose result is its parameters' type gets that type as _output,
// whether the type refers to itself or only holds one that does.
func TestFuncSameTypeWithDefinitions(t *testing.T) {
	reg := agent.NewRegistry()
	if err := agent.Func(reg, "doc", "Echoes a doc.", func(_ context.Context, d treeDoc) (treeDoc, error) { return d, nil }); err != nil {
		t.Fatal(err)
	}
	if err := agent.Func(reg, "node", "Echoes a node.", func(_ context.Context, n treeNode) (treeNode, error) { return n, nil }); err != nil {
		t.Fatal(err)
	}
	offer, _ := reg.Offer()
	p := scripted.Solutions(`{"calls":[{"_tool":"doc","title":"t","root":{"name":"a","children":[{"name":"b"}]},"_outputPath":"†state.d"},`+
		`{"_tool":"node","name":"n","children":[{"name":"m"}],"_outputPath":"†state.n"}],"output":null}`, `{"calls":[],"output":{}}`)
	res, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, Concurrency: 1}, json.RawMessage(`{"type":"object"}`), []message.Message{offer})
	if err != nil {
		t.Fatal(err)
	}
	if errs := errorTexts(res.Log); len(errs) > 0 {
		t.Errorf("errors %q", errs)
	}
	if v := strictValue(t, res.Log, "", "†state.d.root.children.0.name"); v != `"b"` {
		t.Errorf("state.d.root.children.0.name = %s", v)
	}
}

// Definitions are named with letters, digits, ".", "_" and "-" only, so a
// tool whose name has a space or a "%" reaches every provider: refs are
// not percent-decoded everywhere.
func TestToolNameNeedsNoEscaping(t *testing.T) {
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		reg := agent.NewRegistry()
		for _, name := range []string{"my tool", "my_tool", "50%"} {
			reg.Tool(name, json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/item"}},"required":["x"],"$defs":{"item":{"type":"string"}}}`))
			reg.Activity(name, agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
				return &agent.Result{Value: c.Args()}, nil
			}))
		}
		_, m := strictRun(t, a, reg, `{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`,
			`[{"type":"tool","tool":"my tool"},{"type":"tool","tool":"my_tool"},{"type":"tool","tool":"50%"}]`, false,
			strictCalls(strict.Call{Tool: "my tool", Set: set("x", `"s"`, "_outputPath", `"†state.y"`)}, strict.Call{Tool: "50%", Set: set("x", `"t"`, "_outputPath", `"†state.z"`)}),
			strictOutput(`{"done":true}`))
		if s := string(m.schemas()[0]); a.name != "gemini" && (!strings.Contains(s, `"my_tool.item"`) || !strings.Contains(s, `"my_tool.item_2"`) || !strings.Contains(s, `"50_.item"`)) {
			t.Errorf("definition names: %s", s)
		}
	})
}

// Definitions as other generators write them: draft-07 "definitions"
// (zod-to-json-schema's default), a "$id" below the root, a root that is
// a ref with a description beside it.
func TestToolDefinitionsOfOtherShapes(t *testing.T) {
	for name, def := range map[string]string{
		"draft-07":           `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"x":{"$ref":"#/definitions/item"}},"required":["x"],"definitions":{"item":{"type":"string"}}}`,
		"$id below the root": `{"type":"object","properties":{"x":{"$ref":"#/$defs/item"}},"required":["x"],"$defs":{"item":{"$id":"item","type":"string"}}}`,
		"a root ref":         `{"description":"d","$ref":"#/$defs/T","$defs":{"T":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("a", json.RawMessage(def))
			reg.Activity("a", agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
				return &agent.Result{Value: c.Args()}, nil
			}))
			offer, _ := reg.Offer()
			p := scripted.Solutions(`{"calls":[{"_tool":"a","x":"s","_outputPath":"†state.a"},{"_tool":"a","x":1}],"output":null}`, `{"calls":[],"output":{}}`)
			res, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: reg, Concurrency: 1}, json.RawMessage(`{"type":"object"}`), []message.Message{offer})
			if err != nil {
				t.Fatal(err)
			}
			if errs := errorTexts(res.Log); len(errs) != 1 || !strings.Contains(errs[0], "/x") {
				t.Errorf("errors %q, want the second call's at /x", errs)
			}
			if v := strictValue(t, res.Log, "", "†state.a.x"); v != `"s"` {
				t.Errorf("state.a.x = %s", v)
			}
		})
	}
}
