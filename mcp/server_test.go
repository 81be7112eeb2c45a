package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/mcp"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

// serverRegistry has tools of every kind a server may serve.
func serverRegistry() *agent.Registry {
	reg := agent.NewRegistry()
	reg.Schemas().Register("City", json.RawMessage(`{"type":"string","description":"A city, e.g. Paris."}`))
	reg.Tool("weather", json.RawMessage(`{"type":"object","description":"The weather in a city.","properties":{"city":{"$ref":"City"},"_output":{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}},"required":["city"],"additionalProperties":false}`))
	reg.Activity("weather", agent.Bind(func(_ context.Context, p struct {
		City string `json:"city"`
	}) (map[string]any, error) {
		return map[string]any{"temp": 21}, nil
	}))
	reg.Tool("echo", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"list":{"type":"array","items":{"type":"string"}}}}`))
	reg.Activity("echo", agent.ActivityFunc(func(_ context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: c.Args()}, nil
	}))
	reg.Tool("boom", json.RawMessage(`{"type":"object"}`))
	reg.Activity("boom", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		return nil, errors.New("no luck today")
	}))
	reg.Tool("branchy", json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"},"_outputPath":{"const":"†state.done || †state.failed"}}}`))
	reg.Activity("branchy", agent.Bind(func(_ context.Context, p struct {
		OK bool `json:"ok"`
	}) (string, error) {
		if !p.OK {
			return "", errors.New("not ok")
		}
		return "fine", nil
	}))
	reg.Tool("refuse", json.RawMessage(`{"type":"object","properties":{"_outputPath":{"const":"†state.done || †state.refused"}}}`))
	reg.Activity("refuse", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		return &agent.Result{Value: json.RawMessage(`"not today"`), Branch: message.Failure}, nil
	}))
	reg.Tool("latent", json.RawMessage(`{"type":"object","properties":{"_output":{"type":"string"}}}`))
	return reg
}

// capital is an Ideator: it declares its input.
func capital(t *testing.T) *agent.Idea {
	t.Helper()
	idea, err := agent.ParseIdea([]byte(`{
		"schema":{"type":"object","properties":{"capital":{"type":"string"}},"required":["capital"]},
		"context":[
			{"type":"text","role":"system","text":"Names the capital of a country."},
			{"type":"input","schema":{"type":"object","properties":{"country":{"type":"string"}},"required":["country"]}}
		]}`))
	if err != nil {
		t.Fatal(err)
	}
	return idea
}

// serve connects an SDK client to NewServer(cfg) in memory.
func serve(t *testing.T, cfg mcp.ServerConfig) *sdk.ClientSession {
	t.Helper()
	srv, err := mcp.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServerListTools(t *testing.T) {
	model := scripted.Solutions()
	cs := serve(t, mcp.ServerConfig{
		Agent: agent.Config{Registry: serverRegistry(), Provider: model},
		Tools: []string{"weather", "branchy"},
		Ideas: map[string]*agent.Idea{"capital": capital(t), "free": {Schema: json.RawMessage(`{"type":"string"}`)}},
	})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][3]string{}
	for _, tool := range res.Tools {
		got[tool.Name] = [3]string{tool.Description, jsonOf(t, tool.InputSchema), jsonOf(t, tool.OutputSchema)}
	}
	want := map[string][3]string{
		// Named schemas are bundled; meta-properties are left out.
		"weather": {"The weather in a city.",
			`{"$defs":{"City":{"description":"A city, e.g. Paris.","type":"string"}},"additionalProperties":false,"properties":{"city":{"$ref":"#/$defs/City"}},"required":["city"],"type":"object"}`,
			`{"properties":{"temp":{"type":"number"}},"required":["temp"],"type":"object"}`},
		"branchy": {"", `{"properties":{"ok":{"type":"boolean"}},"type":"object"}`, `null`},
		"capital": {"Names the capital of a country.",
			`{"properties":{"country":{"type":"string"}},"required":["country"],"type":"object"}`,
			`{"properties":{"capital":{"type":"string"}},"required":["capital"],"type":"object"}`},
		// An output that is not an object has no outputSchema: MCP
		// before 2026-07-28 takes only objects, and a client of it may
		// refuse the whole list.
		"free": {"", `{"type":"object"}`, "null"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

// result returns a tool result as JSON: isError, the structured content
// and the text.
func result(t *testing.T, cs *sdk.ClientSession, name string, args any) (isError bool, structured, text string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	if res.StructuredContent != nil {
		structured = jsonOf(t, res.StructuredContent)
	}
	return res.IsError, structured, strings.Join(texts, "\n")
}

func TestServerCallTools(t *testing.T) {
	cs := serve(t, mcp.ServerConfig{
		Agent: agent.Config{Registry: serverRegistry()},
		Tools: []string{"weather", "echo", "boom", "branchy", "refuse", "latent"},
	})
	for _, tt := range []struct {
		name       string
		tool       string
		args       any
		isError    bool
		structured string
		text       string // for errors: a part of the text
	}{
		{"value", "weather", map[string]any{"city": "Paris"}, false, `{"temp":21}`, `{"temp":21}`},
		{"daggers are literals", "echo", map[string]any{"text": "†state.x", "list": []string{"††y", "z"}}, false,
			`{"list":["††y","z"],"text":"†state.x"}`, `{"list":["††y","z"],"text":"†state.x"}`},
		{"no arguments", "echo", nil, false, `{}`, `{}`},
		{"activity error", "boom", nil, true, "", `runtime error in boom: no luck today`},
		{"bad parameters", "weather", map[string]any{"town": "Paris"}, true, "", `tool "weather": `},
		{"meta-property", "weather", map[string]any{"city": "Paris", "_outputPath": "†state.x"}, true, "", `argument "_outputPath": a name starting with "_" is a meta-property`},
		// Not an object: text only, as MCP before 2026-07-28 has it.
		{"success branch", "branchy", map[string]any{"ok": true}, false, "", `"fine"`},
		{"error down the failure branch", "branchy", map[string]any{"ok": false}, true, "", `runtime error in branchy: not ok`},
		{"failure branch chosen", "refuse", nil, true, "", `tool "refuse" failed: "not today"`},
		{"latent without a model", "latent", nil, true, "", `no provider`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			isError, structured, text := result(t, cs, tt.tool, tt.args)
			if isError != tt.isError || structured != tt.structured || !strings.Contains(text, tt.text) {
				t.Errorf("got isError %v, %s, %q; want %v, %s, %q", isError, structured, text, tt.isError, tt.structured, tt.text)
			}
		})
	}
}

func TestServerCallIdea(t *testing.T) {
	model := scripted.Solutions(`{"output":{"capital":"Paris"}}`)
	cs := serve(t, mcp.ServerConfig{
		Agent: agent.Config{Registry: serverRegistry(), Provider: model},
		Ideas: map[string]*agent.Idea{"capital": capital(t)},
	})
	isError, structured, text := result(t, cs, "capital", map[string]any{"country": "France"})
	if isError || structured != `{"capital":"Paris"}` || text != `{"capital":"Paris"}` {
		t.Errorf("got %v, %s, %s", isError, structured, text)
	}
	// The model saw the Idea's context, then the arguments as its input.
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var all strings.Builder
	for _, m := range reqs[0].Messages {
		all.WriteString(m.Text)
	}
	for _, want := range []string{"Names the capital of a country.", `"country":"France"`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the request has no %s:\n%s", want, all.String())
		}
	}

	// The input is checked before anything runs.
	isError, _, text = result(t, cs, "capital", map[string]any{"land": "France"})
	if !isError || !strings.Contains(text, `idea "capital": input: `) {
		t.Errorf("bad input: %v, %q", isError, text)
	}
	// A run that fails is an error result: the model has no answer left.
	isError, _, text = result(t, cs, "capital", map[string]any{"country": "Peru"})
	if !isError || !strings.Contains(text, `idea "capital": `) || !strings.Contains(text, "no response left") {
		t.Errorf("failed run: %v, %q", isError, text)
	}
}

// TestServerRoundTrip serves tools with NewServer and uses them through
// the client side of the package.
func TestServerRoundTrip(t *testing.T) {
	srv, err := mcp.NewServer(mcp.ServerConfig{Agent: agent.Config{Registry: serverRegistry()}, Tools: []string{"weather", "boom"}})
	if err != nil {
		t.Fatal(err)
	}
	reg := agent.NewRegistry()
	names, err := memClient(t, srv, "remote_").Register(context.Background(), reg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"remote_boom", "remote_weather"}, names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	plan := []json.RawMessage{
		json.RawMessage(`{"_tool":"remote_weather","city":"Oslo","_outputPath":"†state.w"}`),
		json.RawMessage(`{"_tool":"remote_boom","_outputPath":"†state.b"}`),
	}
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.Log.Lookup("state", []string{"w"}); string(got) != `{"temp":21}` {
		t.Errorf("state.w = %s", got)
	}
	var errs []string
	for _, m := range res.Log.All() {
		if m.Type == message.TypeError {
			errs = append(errs, m.Error)
		}
	}
	want := []string{`runtime error in remote_boom: mcp: server "mem": tool "boom": runtime error in boom: no luck today`}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestNewServerErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  mcp.ServerConfig
		want string
	}{
		{"unknown tool", mcp.ServerConfig{Agent: agent.Config{Registry: serverRegistry()}, Tools: []string{"nope"}}, `mcp: serve "nope": agent: unknown tool "nope"`},
		{"twice", mcp.ServerConfig{Agent: agent.Config{Registry: serverRegistry()}, Tools: []string{"echo", "echo"}}, `mcp: serve "echo": mcp: tool name taken`},
		{"bad name", mcp.ServerConfig{Ideas: map[string]*agent.Idea{"a b": {}}, Agent: agent.Config{Provider: scripted.Solutions()}}, `mcp: serve "a b": a tool name has letters`},
		{"ideas need a model", mcp.ServerConfig{Ideas: map[string]*agent.Idea{"x": {}}}, `mcp: serve ideas: agent: no provider`},
		{"input not an object", mcp.ServerConfig{Agent: agent.Config{Provider: scripted.Solutions()}, Ideas: map[string]*agent.Idea{"x": {
			Context: []message.Message{{Type: message.TypeData, Kind: message.KindInput, Schema: json.RawMessage(`{"type":"string"}`)}}}}},
			`mcp: serve idea "x": input schema has type "string"; MCP takes an object`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mcp.NewServer(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestServerIdeaPresetsCopied: NewServer reads an Idea's presets when it
// is called, as it does the rest of the Idea: changing a preset's
// messages afterwards does not change what a call shows the model.
func TestServerIdeaPresetsCopied(t *testing.T) {
	idea, err := agent.ParseIdea([]byte(`{
		"schema":{"type":"object","properties":{"capital":{"type":"string"}},"required":["capital"]},
		"context":[{"type":"preset","preset":"Tone"},{"type":"text","text":"The capital of France?"}],
		"presets":{"Tone":{"messages":[{"type":"text","role":"system","text":"Answer tersely."}],"temperature":0.5}}}`))
	if err != nil {
		t.Fatal(err)
	}
	model := scripted.Solutions(`{"output":{"capital":"Paris"}}`)
	cs := serve(t, mcp.ServerConfig{
		Agent: agent.Config{Registry: serverRegistry(), Provider: model},
		Ideas: map[string]*agent.Idea{"capital": idea},
	})
	idea.Presets["Tone"].Messages[0].Text = "Answer at length."
	*idea.Presets["Tone"].Temperature = 1.5
	if isError, _, text := result(t, cs, "capital", nil); isError {
		t.Fatalf("call failed: %s", text)
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var all strings.Builder
	for _, m := range reqs[0].Messages {
		all.WriteString(m.Text)
	}
	if s := all.String(); !strings.Contains(s, "Answer tersely.") || strings.Contains(s, "at length") {
		t.Errorf("the request shows the preset as changed after NewServer:\n%s", s)
	}
	if temp := reqs[0].Temperature; temp == nil || *temp != 0.5 {
		t.Errorf("temperature %v, want 0.5", temp)
	}
}

// section is a recursive type: a tool made of it by agent.Func keeps it
// as a definition of the tool's $defs.
type section struct {
	Title    string    `json:"title"`
	Sections []section `json:"sections,omitempty"`
}

// TestServerOutputSchemaDefs serves tools whose results refer to a
// definition of the tool's $defs, or to a registered schema: each
// outputSchema carries the definitions it refers to, is an object's
// schema, and the result meets it; and the tools come back through the
// client side of the package.
func TestServerOutputSchemaDefs(t *testing.T) {
	reg := agent.NewRegistry()
	type outline struct {
		Root section `json:"root"`
	}
	if err := agent.Func(reg, "outline", "Outlines a topic.", func(_ context.Context, p struct {
		Topic string `json:"topic"`
	}) (outline, error) {
		return outline{Root: section{Title: p.Topic, Sections: []section{{Title: "a"}}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := agent.Func(reg, "flatten", "Flattens a section.", func(_ context.Context, s section) (section, error) {
		return section{Title: s.Title}, nil
	}); err != nil {
		t.Fatal(err)
	}
	reg.Schemas().Register("Weather", json.RawMessage(`{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}`))
	reg.Tool("weather", json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"_output":{"$ref":"Weather"}}}`))
	reg.Activity("weather", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		return agent.Value(map[string]int{"temp": 21})
	}))
	cfg := mcp.ServerConfig{Agent: agent.Config{Registry: reg}, Tools: []string{"outline", "flatten", "weather"}}
	cs := serve(t, cfg)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]string{"outline": `{"topic":"Go"}`, "flatten": `{"title":"Go","sections":[{"title":"a"}]}`, "weather": `{"city":"Oslo"}`}
	for _, tool := range list.Tools {
		out := jsonOf(t, tool.OutputSchema)
		check, err := agent.NewRegistry().Schemas().Compile(json.RawMessage(out))
		if err != nil {
			t.Errorf("%s: outputSchema %s: %v", tool.Name, out, err)
			continue
		}
		if !strings.HasPrefix(out, "{") || !strings.Contains(out, `"type":"object"`) {
			t.Errorf("%s: outputSchema %s, want an object's schema", tool.Name, out)
		}
		isError, structured, text := result(t, cs, tool.Name, json.RawMessage(args[tool.Name]))
		if isError || structured == "" {
			t.Fatalf("%s: isError %v, structured %s, text %s", tool.Name, isError, structured, text)
		}
		if err := check.Validate(json.RawMessage(structured)); err != nil {
			t.Errorf("%s: the result %s does not meet the outputSchema %s: %v", tool.Name, structured, out, err)
		}
	}
	srv, err := mcp.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	names, err := memClient(t, srv, "remote_").Register(context.Background(), agent.NewRegistry())
	if err != nil || len(names) != 3 {
		t.Errorf("registering the served tools: %v, %v", names, err)
	}
}
