package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/schema"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/request/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "request", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(got), string(want)); d != "" {
		t.Errorf("%s (-got +want):\n%s", name, d)
	}
}

func ctxOf(t *testing.T, s string) []message.Message {
	t.Helper()
	msgs, err := message.ParseContext([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// sent renders what the provider received, for golden files.
func sent(t *testing.T, req provider.Request) []byte {
	t.Helper()
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString("--- " + string(m.Role) + "\n" + m.Text + "\n")
	}
	var s json.RawMessage = req.Schema
	out, _ := json.MarshalIndent(s, "", "  ")
	b.WriteString("--- schema\n" + string(out) + "\n")
	return []byte(b.String())
}

func TestRequestRendersData(t *testing.T) {
	// The example of page 005: text passes through, the two user messages
	// are merged into one data block.
	msgs := ctxOf(t, `[
		{"type": "text", "text": "Update the user's city to Austin"},
		{"type": "data", "kind": "user", "description": "Represents the current user.", "data": {"name": "John Doe"},
		 "schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "number"}, "city": {"type": "string"}}}},
		{"type": "data", "kind": "user", "data": {"age": 30}}
	]`)
	for _, rendering := range []agent.Rendering{agent.RenderSnapshot, agent.RenderCached} {
		p := scripted.Solutions(`{"output":{"city":"Austin"}}`)
		resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), Rendering: rendering},
			json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`), msgs)
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Solutions[0].Output) != `{"city":"Austin"}` || !resp.Solutions[0].Done() {
			t.Errorf("output %s", resp.Solutions[0].Output)
		}
		// A snapshot shows the page's one merged block; the default shows
		// the second message as an update where it comes.
		name := "005_data.txt"
		if rendering == agent.RenderCached {
			name = "005_data_cached.txt"
		}
		golden(t, name, sent(t, p.Requests()[0]))
	}
}

func TestRequestRendersInput(t *testing.T) {
	// The example of page 006.
	msgs := ctxOf(t, `[{"type": "input", "input": {"userName": "Jane", "topic": "the weather"},
		"schema": {"type": "object", "properties": {"userName": {"type": "string", "description": "Author of the article"}, "topic": {"type": "string", "description": "Topic to write article about"}}}}]`)
	p := scripted.Solutions(`{"output":{"article":"..."}}`)
	if _, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"object"}`), msgs); err != nil {
		t.Fatal(err)
	}
	golden(t, "006_input.txt", sent(t, p.Requests()[0]))
}

func TestRequestComposesTools(t *testing.T) {
	// The composition example of page 002, plus a second definition of
	// greetUser that replaces the first and a registered tool named by a
	// tool message.
	reg := agent.NewRegistry()
	reg.Tool("sentimentAnalysis", json.RawMessage(`{"type":"object","description":"Analyzes text sentiment","properties":{
		"_tool":{"type":"string","const":"sentimentAnalysis"},"text":{"type":"string","description":"Text to analyze"},
		"_output":{"type":"object","properties":{"sentiment":{"type":"string"},"confidence":{"type":"number"}}}},"required":["text"]}`))
	reg.Tool("chargeCard", json.RawMessage(`{"type":"object","properties":{"_activity":{"const":"charge"},"amount":{"type":"number"},"_output":{"type":"object"}},"required":["amount"]}`))
	msgs := ctxOf(t, `[
		{"type": "tool", "tool": {"greetUser": {"type": "object", "properties": {"name": {"type": "string"}}}}},
		{"type": "tool", "tool": {"greetUser": {"type": "object", "properties": {"userName": {"type": "string"}}, "required": ["userName"]}}},
		{"type": "tool", "tool": "Tool.sentimentAnalysis"},
		{"type": "tool", "tool": "chargeCard"},
		{"type": "text", "text": "some prompt here"}
	]`)
	p := scripted.Solutions(`{"calls":[{"_tool":"greetUser","userName":"Ann"},{"_tool":"sentimentAnalysis","text":"yay","_output":{"sentiment":"positive","confidence":0.9}}],"output":null}`)
	resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: reg},
		json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}`), msgs)
	if err != nil {
		t.Fatal(err)
	}
	s := resp.Solutions[0]
	if s.Done() || len(s.Calls) != 2 {
		t.Errorf("solution %s: want two calls and no output", s.Raw)
	}
	golden(t, "002_tools.txt", sent(t, p.Requests()[0]))
}

func TestRequestRepairsInvalidSolutions(t *testing.T) {
	p := scripted.New(
		scripted.Response{Solutions: []string{`{"output": {"n": 1}`}, Usage: provider.Usage{Input: 10, Output: 5}},
		scripted.Response{Solutions: []string{`{"output": {"n": "one"}}`}, Usage: provider.Usage{Input: 20, Output: 5}},
		scripted.Response{Solutions: []string{"```json\n{\"output\": {\"n\": 1}}\n```"}, Usage: provider.Usage{Input: 30, Output: 5}},
	)
	var repairs []string
	var final *agent.Response
	for ev, err := range agent.Stream(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()},
		json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`), []message.Message{message.Text("count")}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Repair != nil {
			repairs = append(repairs, ev.Repair.Err.Error())
		}
		if ev.Response != nil {
			final = ev.Response
		}
	}
	if len(repairs) != 2 || string(final.Solutions[0].Output) != `{"n": 1}` {
		t.Fatalf("repairs %q, output %s", repairs, final.Solutions[0].Output)
	}
	if final.Usage.Input != 60 {
		t.Errorf("usage %+v, want the sum of the three calls", final.Usage)
	}
	reqs := p.Requests()
	last := reqs[2].Messages
	if len(last) != 5 || last[3].Role != provider.RoleAssistant || last[3].Text != `{"output": {"n": "one"}}` ||
		!strings.Contains(last[4].Text, "does not match the required JSON schema") || !strings.Contains(last[4].Text, "/output/n") {
		t.Errorf("repair conversation: %+v", last)
	}
}

func TestRequestGivesUpWithTheRawText(t *testing.T) {
	p := scripted.Solutions(`nope`, `still nope`)
	_, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxRepairs: 1}, json.RawMessage(`{}`), []message.Message{message.Text("x")})
	var inv *agent.InvalidError
	if !errors.As(err, &inv) || inv.Raw != "still nope" || inv.Attempts != 2 {
		t.Fatalf("got %v, want an InvalidError with the last raw text", err)
	}
}

// TestRequestAnswerCut: an answer the provider ended at the output token
// limit is re-asked saying so, not as mere bad JSON, which the model
// would write again just as long; past the repairs the error is
// ErrAnswerCut, with the text the model wrote. A whole answer that ends
// exactly at the limit is taken.
func TestRequestAnswerCut(t *testing.T) {
	out := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	for _, finish := range []string{"length", "max_tokens", "continuation"} {
		t.Run(finish, func(t *testing.T) {
			p := scripted.New(
				scripted.Response{Solutions: []string{`{"output": {"n": 12`}, FinishReason: finish},
				scripted.Response{Solutions: []string{`{"output": {"n": 1}}`}, FinishReason: finish})
			resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, out, []message.Message{message.Text("count")})
			if err != nil || string(resp.Solutions[0].Output) != `{"n": 1}` {
				t.Fatalf("%v, %+v", err, resp)
			}
			reqs := p.Requests()
			if last := reqs[1].Messages; !strings.Contains(last[len(last)-1].Text, "reached the output token limit") {
				t.Errorf("repair prompt: %q", last[len(last)-1].Text)
			}
			p = scripted.New(scripted.Response{Solutions: []string{`{"output": {"n": 12`}, FinishReason: finish})
			_, err = agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxRepairs: -1}, out, []message.Message{message.Text("count")})
			inv, ok := errors.AsType[*agent.InvalidError](err)
			if !errors.Is(err, agent.ErrAnswerCut) || !ok || inv.Raw != `{"output": {"n": 12` || !strings.Contains(err.Error(), `finish reason "`+finish+`"`) {
				t.Errorf("got %v, want an InvalidError wrapping ErrAnswerCut with the text", err)
			}
		})
	}
	// A bad answer that was not cut is not said to be.
	p := scripted.Solutions(`{"output": {"n": 12`)
	_, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxRepairs: -1}, out, []message.Message{message.Text("count")})
	if err == nil || errors.Is(err, agent.ErrAnswerCut) {
		t.Errorf("got %v, want invalid JSON only", err)
	}
}

// An answer that is not JSON says where it breaks, for the model asked to
// repair it and for whoever reads the error, and keeps the decoder's
// error for errors.As. The byte is the answer's as written: a code fence
// and white space around the JSON count.
func TestRequestInvalidJSONSaysWhere(t *testing.T) {
	for _, tt := range []struct{ name, answer, where string }{
		{"bare", `{"calls":[], "output": nul}`, "at byte 27 of 27"},
		{"fenced", "  ```json\n" + `{"calls":[], "output": nul}` + "\n```\n", "at byte 37 of 42"},
		{"fenced on one line", "```" + `{"calls":[], "output": nul}` + "```", "at byte 30 of 33"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := scripted.Solutions(tt.answer)
			_, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxRepairs: -1}, json.RawMessage(`{}`), []message.Message{message.Text("x")})
			want := `agent: solution 0 invalid after 1 attempts: invalid JSON ` + tt.where + `: invalid character '}' in literal null (expecting 'l')`
			if _, ok := errors.AsType[*json.SyntaxError](err); !ok || err.Error() != want {
				t.Errorf("got %v\nwant %s", err, want)
			}
			// The byte named is the one the decoder stopped at, in Raw.
			var at, of int
			fmt.Sscanf(tt.where, "at byte %d of %d", &at, &of)
			if ie, ok := errors.AsType[*agent.InvalidError](err); !ok || len(ie.Raw) != of || ie.Raw[at-1] != '}' {
				t.Errorf("the error names byte %d of %d; Raw is %q", at, of, ie.Raw)
			}
		})
	}
}

func TestRequestSchemaViolationIsTyped(t *testing.T) {
	p := scripted.Solutions(`{"output":{"n":"x"}}`)
	_, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxRepairs: -1},
		json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`), []message.Message{message.Text("x")})
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a *schema.ValidationError inside", err)
	}
}

func TestRequestMultiplexes(t *testing.T) {
	p := scripted.New(scripted.Response{Solutions: []string{`{"output":"a"}`, `{"output":"b"}`}})
	resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 2}, json.RawMessage(`{"type":"string"}`), []message.Message{message.Text("x")})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Solutions) != 2 || string(resp.Solutions[1].Output) != `"b"` || p.Requests()[0].N != 2 {
		t.Errorf("solutions %+v", resp.Solutions)
	}
}

func TestRequestStreamsCallsEarly(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	p := scripted.New(scripted.Response{Chunks: []string{`{"calls":[{"_tool":"t",`, `"x":1},{"_to`, `ol":"t","x":2}`, `],"output":null}`}})
	var order []string
	for ev, err := range agent.Stream(context.Background(), agent.Config{Provider: p, Registry: reg, CallbackPath: "calls"},
		json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"t"},{"type":"text","text":"go"}]`)) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Element != nil:
			order = append(order, ev.Element.Path+"="+string(ev.Element.Value))
		case ev.Response != nil:
			order = append(order, "response")
		case ev.Thinking == nil && ev.Output == nil && ev.Repair == nil:
			order = append(order, "an event with nothing in it")
		}
	}
	want := []string{`calls.0={"_tool":"t","x":1}`, `calls.1={"_tool":"t","x":2}`, "response"}
	if d := cmp.Diff(order, want); d != "" {
		t.Errorf("events (-got +want):\n%s", d)
	}
	if !p.Requests()[0].Stream {
		t.Error("the provider was not asked to stream")
	}
}

// TestStreamElementsAreKept checks that a Stream consumer owns the
// elements it is handed: each stays as it was after the stream goes on,
// for elements of one chunk and of several.
func TestStreamElementsAreKept(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	p := scripted.New(scripted.Response{Chunks: []string{`{"calls":[{"_tool":"t","x":1},{"_tool":"t","x":2},{"_to`, `ol":"t","x":3}],"output":null}`}})
	var kept []*agent.Element
	for ev, err := range agent.Stream(context.Background(), agent.Config{Provider: p, Registry: reg, CallbackPath: "calls"},
		json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"t"},{"type":"text","text":"go"}]`)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Element != nil {
			kept = append(kept, ev.Element)
		}
	}
	if len(kept) != 3 {
		t.Fatalf("%d elements, want 3", len(kept))
	}
	for i, el := range kept {
		if want := fmt.Sprintf(`{"_tool":"t","x":%d}`, i+1); string(el.Value) != want || el.Path != fmt.Sprintf("calls.%d", i) {
			t.Errorf("element %d is now %s %s, want %s", i, el.Path, el.Value, want)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cfg     agent.Config
		context string
		want    error
		text    string
	}{
		{"no provider", agent.Config{}, `[]`, agent.ErrNoProvider, ""},
		{"unknown type", agent.Config{Provider: scripted.Solutions()}, `[{"type":"text","text":"a"},{"type":"widget","widget":"x"}]`, agent.ErrUnknownType,
			`agent: message 1 (widget): no handler for message type "widget" (types: advisor, compaction, data, error, meta, plan, preset, text, tool; register one with Registry.Handle)`},
		{"unknown tool", agent.Config{Provider: scripted.Solutions()}, `[{"type":"tool","tool":"Tool.nope"}]`, agent.ErrUnknownTool, ""},
		{"provider error", agent.Config{Provider: scripted.New(scripted.Response{Err: &provider.Error{Provider: "x", Status: 500}})}, `[]`, nil, "agent: provider: x: 500 Internal Server Error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.Registry == nil {
				tt.cfg.Registry = agent.NewRegistry()
			}
			_, err := agent.Request(context.Background(), tt.cfg, json.RawMessage(`{}`), ctxOf(t, tt.context))
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) || tt.text != "" && err.Error() != tt.text {
				t.Errorf("got %v, want %v %q", err, tt.want, tt.text)
			}
		})
	}
}

func TestCustomHandler(t *testing.T) {
	reg := agent.NewRegistry()
	reg.HandleFunc("preset", func(ctx context.Context, b *agent.Build, m *message.Message) error {
		b.Render(provider.RoleSystem, "You are a council of advisors.")
		b.LLM.Temperature = new(0.2)
		return nil
	})
	p := scripted.Solutions(`{"output":1}`)
	if _, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{}`), ctxOf(t, `[{"type":"preset","preset":"Council"}]`)); err != nil {
		t.Fatal(err)
	}
	r := p.Requests()[0]
	if r.Messages[0].Text != "You are a council of advisors." || r.Temperature == nil || *r.Temperature != 0.2 {
		t.Errorf("got %+v", r)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a type twice did not panic")
		}
	}()
	reg.HandleFunc("preset", func(context.Context, *agent.Build, *message.Message) error { return nil })
}

type weather struct {
	City  string  `json:"city" jsonschema:"description=The city"`
	TempC float64 `json:"tempC"`
}

func TestRequestAs(t *testing.T) {
	p := scripted.Solutions(`{"output":{"city":"Paris","tempC":21.5}}`)
	sols, _, err := agent.RequestAs[weather](context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, []message.Message{message.Text("weather?")})
	if err != nil {
		t.Fatal(err)
	}
	if sols[0].Value != (weather{City: "Paris", TempC: 21.5}) {
		t.Errorf("got %+v", sols[0].Value)
	}
	if !strings.Contains(string(p.Requests()[0].Schema), `"description":"The city"`) {
		t.Errorf("schema sent lacks the struct tag description: %s", p.Requests()[0].Schema)
	}
}

// A struct tag the schema would not say (a description cut at a comma)
// fails RequestAs before the model is asked, and paid.
func TestRequestAsTagError(t *testing.T) {
	type answer struct {
		City string `json:"city" jsonschema:"description=The city, as the user wrote it"`
	}
	p := scripted.Solutions(`{"output":{"city":"Paris"}}`)
	_, _, err := agent.RequestAs[answer](context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, []message.Message{message.Text("where?")})
	if err == nil || !strings.Contains(err.Error(), `answer.City: jsonschema tag part " as the user wrote it"`) {
		t.Errorf("error %v, want the tag's", err)
	}
	if n := len(p.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestRequestInterleavedSolutions(t *testing.T) {
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			for _, c := range []*provider.Chunk{{Index: 0, Text: `{"output":`}, {Index: 1, Text: `{"output":`}, {Index: 0, Text: `1}`}, {Index: 1, Text: `2}`, Usage: &provider.Usage{Input: 1}}} {
				if !yield(c, nil) {
					return
				}
			}
		}
	})
	resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 2, CallbackPath: "output"}, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("x")})
	if err != nil || string(resp.Solutions[0].Output) != "1" || string(resp.Solutions[1].Output) != "2" {
		t.Fatalf("got %+v, %v", resp, err)
	}
}

func TestRequestAcceptsNullForOptional(t *testing.T) {
	// What a strict-mode provider writes for properties the model leaves out.
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`))
	p := scripted.Solutions(`{"calls":[{"_tool":"t","x":null,"_outputPath":null}],"output":null}`)
	resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: reg, MaxRepairs: -1}, json.RawMessage(`{}`), ctxOf(t, `[{"type":"tool","tool":"t"}]`))
	if err != nil || len(resp.Solutions[0].Calls) != 1 {
		t.Fatalf("got %v, %v", resp, err)
	}
}

// TestRequestFaultyProviderStops: a provider that goes on yielding after
// it was told to stop is not read further: its error stands, and the text
// it sends afterwards is not taken for a solution.
func TestRequestFaultyProviderStops(t *testing.T) {
	yields := 0
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			yields++
			yield(nil, &provider.Error{Provider: "x", Status: 502}) // ignores the false it gets
			yield(&provider.Chunk{Text: `{"output":1}`, Done: true}, nil)
		}
	})
	resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("x")})
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 502 || resp != nil && len(resp.Solutions) > 0 {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if yields != 1 {
		t.Errorf("the provider was called %d times", yields)
	}
}

// An output schema from a recursive Go type refers to its own root
// ("#"). In the composed schema it is no longer the root: its refs follow
// it, so its nested values are checked against it, not against the
// solution.
func TestRequestRecursiveOutput(t *testing.T) {
	type node struct {
		Name string `json:"name"`
		Kids []node `json:"kids"`
	}
	out := schema.For[node]()
	p := scripted.Solutions(`{"output":{"name":"a","kids":[{"name":"b","kids":[]}]}}`)
	sol, err := agent.Request(context.Background(), agent.Config{Provider: p}, out, ctxOf(t, `[{"type":"text","text":"a tree"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(sol.Solutions[0].Output); got != `{"name":"a","kids":[{"name":"b","kids":[]}]}` {
		t.Errorf("output %s", got)
	}
	if s := string(p.Requests()[0].Schema); !strings.Contains(s, `"output":{"anyOf":[{"$ref":"#/$defs/_output"},{"type":"null"}]}`) {
		t.Errorf("the output's ref does not follow it:\n%s", s)
	}
	bad := scripted.Solutions(`{"output":{"name":"a","kids":[{"name":1,"kids":[]}]}}`)
	_, err = agent.Request(context.Background(), agent.Config{Provider: bad, MaxRepairs: -1}, out, ctxOf(t, `[{"type":"text","text":"a tree"}]`))
	if ie, ok := errors.AsType[*agent.InvalidError](err); !ok || !strings.Contains(err.Error(), "/output/kids/0/name") {
		t.Errorf("err = %v (%T, %v), want an invalid output at /output/kids/0/name", err, err, ie)
	}
}

// Output schemas as generators write them: a root $id, anchors, refs into
// a property or a branch of an anyOf. Each checks solutions as it does on
// its own, in the composed schema that is compiled as a strict provider
// gets it (optional properties nullable).
func TestRequestOutputRefs(t *testing.T) {
	for _, tt := range []struct {
		name, schema   string
		valid, invalid string
	}{
		{"root $id", `{"$id":"https://example.com/person","type":"object","properties":{"n":{"$ref":"#/$defs/name"}},"required":["n"],"$defs":{"name":{"type":"string"}}}`,
			`{"n":"bob"}`, `{"n":1}`},
		{"anchor", `{"type":"object","properties":{"n":{"$ref":"#name"}},"required":["n"],"$defs":{"name":{"$anchor":"name","type":"string"}}}`,
			`{"n":"bob"}`, `{"n":1}`},
		{"a ref to a branch", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer"}]},"b":{"$ref":"#/properties/a/anyOf/1"}},"required":["b"]}`,
			`{"b":5}`, `{"b":"x"}`},
		{"a ref to an optional property", `{"type":"object","properties":{"a":{"type":"string"},"b":{"$ref":"#/properties/a"}},"required":["b"]}`,
			`{"b":"x"}`, `{"b":null}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ask := func(output string) error {
				p := scripted.Solutions(`{"output":` + output + `}`)
				_, err := agent.Request(context.Background(), agent.Config{Provider: p, MaxRepairs: -1}, json.RawMessage(tt.schema), ctxOf(t, `[{"type":"text","text":"go"}]`))
				return err
			}
			if err := ask(tt.valid); err != nil {
				t.Errorf("%s: %v", tt.valid, err)
			}
			if _, ok := errors.AsType[*agent.InvalidError](ask(tt.invalid)); !ok {
				t.Errorf("%s was accepted", tt.invalid)
			}
		})
	}
}

// TestRequestAsksForMissingSolutions: a server that ignores n (Ollama's
// OpenAI API, for one) answers once. The solutions it did not give are
// asked for again, and their events carry their own index.
func TestRequestAsksForMissingSolutions(t *testing.T) {
	var asked []int
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		asked = append(asked, req.N)
		text := fmt.Sprintf(`{"output":%d}`, len(asked))
		return func(yield func(*provider.Chunk, error) bool) {
			yield(&provider.Chunk{Text: text, Done: true, Usage: &provider.Usage{Input: 10, Output: 1}}, nil)
		}
	})
	var elements []int
	cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 3, CallbackPath: "output"}
	var resp *agent.Response
	for ev, err := range agent.Stream(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("x")}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Element != nil {
			elements = append(elements, ev.Element.Index)
		}
		if ev.Response != nil {
			resp = ev.Response
		}
	}
	if resp == nil || len(resp.Solutions) != 3 {
		t.Fatalf("response %+v", resp)
	}
	for i, s := range resp.Solutions {
		if want := fmt.Sprint(i + 1); string(s.Output) != want {
			t.Errorf("solution %d is %s, want %s", i, s.Output, want)
		}
	}
	if d := cmp.Diff([]int{3, 2, 1}, asked); d != "" {
		t.Errorf("n asked (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{0, 1, 2}, elements); d != "" {
		t.Errorf("element indexes (-want +got):\n%s", d)
	}
	if resp.Usage.Input != 30 {
		t.Errorf("usage %+v, want the three requests'", resp.Usage)
	}
}

// stopError is a provider.SolutionError that stops the solutions it names.
type stopError []int

func (e stopError) Error() string    { return fmt.Sprintf("test: solutions %v stopped", []int(e)) }
func (e stopError) Solutions() []int { return e }

// TestRequestStoppedSolutions: solutions 0 and 2 of three stopped (a
// refusal, a content filter) are no solutions. A Repair event for each
// says that its pieces start again, and the request asks again for the
// two, whose events carry their own index. When the provider then fails,
// or stops them again, the solutions left stand, with a warning: the one
// never stopped, and one that arrived whole before the provider failed.
// A Lost event names each solution left out, with its last text; the
// usage sums every request.
func TestRequestStoppedSolutions(t *testing.T) {
	for _, tt := range []struct {
		name    string
		again   func(yield func(*provider.Chunk, error) bool) // the answer asked again
		want    []string                                      // the outputs
		warning string                                        // in the log
	}{
		{"answered", func(yield func(*provider.Chunk, error) bool) {
			_ = yield(&provider.Chunk{Index: 0, Text: `{"output":4}`, Done: true}, nil) &&
				yield(&provider.Chunk{Index: 1, Text: `{"output":5}`, Done: true, Usage: &provider.Usage{Input: 10}}, nil)
		}, []string{"4", "2", "5"}, ""},
		{"stopped again", func(yield func(*provider.Chunk, error) bool) {
			_ = yield(&provider.Chunk{Index: 0, Text: `{"output":4}`, Done: true}, nil) &&
				yield(&provider.Chunk{Index: 1, Text: `{"outp`, Done: true, Usage: &provider.Usage{Input: 10}}, nil) &&
				yield(nil, stopError{1})
		}, []string{"4", "2"}, "error=\"agent: provider: test: solutions [1] stopped\""},
		{"failed", func(yield func(*provider.Chunk, error) bool) {
			_ = yield(&provider.Chunk{Index: 0, Text: `{"output":4}`, Done: true, Usage: &provider.Usage{Input: 10}}, nil) &&
				yield(nil, &provider.Error{Provider: "x", Status: 500})
		}, []string{"4", "2"}, "error=\"agent: provider: x: 500 Internal Server Error\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var asked []int
			p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
				asked = append(asked, req.N)
				if len(asked) > 1 {
					return tt.again
				}
				return func(yield func(*provider.Chunk, error) bool) {
					_ = yield(&provider.Chunk{Index: 0, Text: `{"output":`, Done: true, FinishReason: "refusal"}, nil) &&
						yield(&provider.Chunk{Index: 1, Text: `{"output":2}`, Done: true}, nil) &&
						yield(&provider.Chunk{Index: 2, Text: `{"output":3}`, Done: true, FinishReason: "content_filter", Usage: &provider.Usage{Input: 10}}, nil) &&
						yield(nil, stopError{0, 2})
				}
			})
			var log strings.Builder
			cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 3, Logger: slog.New(slog.NewTextHandler(&log, nil))}
			var events []string
			var resp *agent.Response
			for ev, err := range agent.Stream(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("x")}) {
				switch {
				case err != nil:
					t.Fatal(err)
				case ev.Output != nil:
					events = append(events, fmt.Sprintf("output %d %s", ev.Output.Index, ev.Output.JSON))
				case ev.Repair != nil:
					if _, ok := errors.AsType[stopError](ev.Repair); !ok {
						t.Errorf("repair %v, want the provider's error", ev.Repair)
					}
					events = append(events, fmt.Sprintf("repair %d %s", ev.Repair.Index, ev.Repair.Raw))
				case ev.Lost != nil:
					events = append(events, fmt.Sprintf("lost %d %s", ev.Lost.Index, ev.Lost.Raw))
				case ev.Response != nil:
					resp = ev.Response
				}
			}
			if resp == nil {
				t.Fatal("no response")
			}
			var got []string
			for _, s := range resp.Solutions {
				got = append(got, string(s.Output))
			}
			if d := cmp.Diff(got, tt.want); d != "" {
				t.Errorf("outputs (-got +want):\n%s", d)
			}
			if d := cmp.Diff(asked, []int{3, 2}); d != "" {
				t.Errorf("n asked (-got +want):\n%s", d)
			}
			if resp.Usage.Input != 20 {
				t.Errorf("usage %+v, want the two requests'", resp.Usage)
			}
			wantEvents := []string{"output 1 2", "output 2 3", `repair 0 {"output":`, `repair 2 {"output":3}`, "output 0 4"}
			switch tt.name {
			case "answered":
				wantEvents = append(wantEvents, "output 2 5")
			case "stopped again":
				wantEvents = append(wantEvents, `lost 2 {"outp`)
			case "failed":
				wantEvents = append(wantEvents, `lost 2 {"output":3}`)
			}
			if d := cmp.Diff(events, wantEvents); d != "" {
				t.Errorf("events (-got +want):\n%s", d)
			}
			if warned := strings.Contains(log.String(), "level=WARN"); warned != (tt.warning != "") || !strings.Contains(log.String(), tt.warning) {
				t.Errorf("log %q, want a warning with %s", log.String(), tt.warning)
			}
		})
	}
}

// TestRequestNoMoreSolutions: a provider that gives nothing, or fails,
// when asked for the rest is not asked again; the solutions it gave stand,
// with their usage, rather than being lost with the request.
func TestRequestNoMoreSolutions(t *testing.T) {
	for name, fail := range map[string]error{"none": nil, "error": &provider.Error{Provider: "x", Status: 429}} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
				calls++
				return func(yield func(*provider.Chunk, error) bool) {
					switch {
					case calls == 1:
						yield(&provider.Chunk{Text: `{"output":1}`, Done: true, Usage: &provider.Usage{Input: 10}}, nil)
					case fail != nil:
						yield(&provider.Chunk{Text: `{"outp`}, nil)
						yield(nil, fail)
					}
				}
			})
			resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 3}, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("x")})
			if err != nil || calls != 2 {
				t.Fatalf("%d calls, error %v", calls, err)
			}
			if len(resp.Solutions) != 1 || string(resp.Solutions[0].Output) != "1" || resp.Usage.Input != 10 {
				t.Errorf("response %+v", resp)
			}
		})
	}
}

// TestRequestRepairEventsIndex: the events of the answer that repairs
// solution 1 of two say solution 1, not the 0 of the one-solution request
// the repair makes.
func TestRequestRepairEventsIndex(t *testing.T) {
	asked := 0
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		asked++
		chunks := []*provider.Chunk{{Index: 0, Text: `{"output":1}`, Done: true}, {Index: 1, Text: `{"output":"two"}`, Done: true}}
		if asked > 1 { // the repair of solution 1
			chunks = []*provider.Chunk{{Thinking: "A number.", Text: `{"output":2}`, Done: true}}
		}
		return func(yield func(*provider.Chunk, error) bool) {
			for _, c := range chunks {
				if !yield(c, nil) {
					return
				}
			}
		}
	})
	cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 2, CallbackPath: "output"}
	var seen []string
	for ev, err := range agent.Stream(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("x")}) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.Thinking != nil:
			seen = append(seen, fmt.Sprintf("thinking %d", ev.Thinking.Index))
		case ev.Output != nil:
			seen = append(seen, fmt.Sprintf("output %d %s", ev.Output.Index, ev.Output.JSON))
		case ev.Element != nil:
			seen = append(seen, fmt.Sprintf("element %d", ev.Element.Index))
		case ev.Repair != nil:
			seen = append(seen, fmt.Sprintf("repair %d", ev.Repair.Index))
		case ev.Response != nil:
			if got := string(ev.Response.Solutions[1].Output); got != "2" {
				t.Errorf("solution 1 is %s, want 2", got)
			}
		}
	}
	want := []string{"element 0", "output 0 1", "element 1", "output 1 \"two\"", "repair 1", "thinking 1", "element 1", "output 1 2"}
	if !slices.Equal(seen, want) {
		t.Errorf("events %q\nwant %q", seen, want)
	}
}

// The provider package's errors say "provider:" themselves: a request
// that fails with one says it once, not "provider: provider: …".
func TestProviderErrorSaysProviderOnce(t *testing.T) {
	for _, perr := range []error{
		fmt.Errorf("%w after 12 bytes", provider.ErrTruncated),
		provider.ErrNoKey,
		&provider.Error{Provider: "openai", Model: "gpt-5", Status: 500, Err: errors.New("boom")},
	} {
		p := provider.Func(func(context.Context, *provider.Request) iter.Seq2[*provider.Chunk, error] {
			return func(yield func(*provider.Chunk, error) bool) { yield(nil, perr) }
		})
		_, err := agent.Request(t.Context(), agent.Config{Provider: p}, json.RawMessage(`{"type":"string"}`), []message.Message{message.Text("hi")})
		if !errors.Is(err, perr) {
			t.Fatalf("err %v, want it to wrap %v", err, perr)
		}
		if n := strings.Count(err.Error(), "provider:"); n != 1 {
			t.Errorf("%q says provider: %d times, want once", err, n)
		}
	}
}

// TestRequestAsUndecoded: an output that conforms to T's schema but does
// not decode into a T (1.0 for an int8, an integer to JSON Schema, not to
// encoding/json) is named by its exact place, the map key included; and
// with several solutions, those that decode are kept, returned with an
// error that says which did not.
func TestRequestAsUndecoded(t *testing.T) {
	type tally struct {
		Count map[string]int8 `json:"count"`
	}
	good0, bad, good2 := `{"output":{"count":{"a":1}}}`, `{"output":{"count":{"b":2,"a":1.0}}}`, `{"output":{"count":{"c":3}}}`
	msgs := []message.Message{message.Text("count")}

	p := scripted.New(scripted.Response{Solutions: []string{good0, bad, good2}})
	got, resp, err := agent.RequestAs[tally](context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 3}, msgs)
	ue, ok := errors.AsType[*agent.UndecodedError](err)
	if !ok {
		t.Fatalf("got %v, want an *agent.UndecodedError", err)
	}
	if diff := cmp.Diff([]int{1}, ue.Indexes); diff != "" {
		t.Errorf("Indexes (-want +got):\n%s", diff)
	}
	de, ok := errors.AsType[*schema.DecodeError](err)
	if !ok || de.InstancePath != "/count/a" {
		t.Errorf("got %v, want a *schema.DecodeError at /count/a", err)
	}
	const wantText = `agent: solution 1: schema: decode at /count/a: json: cannot unmarshal number 1.0 into Go struct field tally.count of type int8`
	if err.Error() != wantText {
		t.Errorf("error text\n%s\nwant\n%s", err, wantText)
	}
	if len(got) != 2 || got[0].Value.Count["a"] != 1 || got[1].Value.Count["c"] != 3 || string(got[1].Output) != string(resp.Solutions[2].Output) {
		t.Errorf("typed results %+v, want solutions 0 and 2", got)
	}

	// One solution that does not decode: no result, the same error.
	p = scripted.New(scripted.Response{Solutions: []string{bad}})
	got, _, err = agent.RequestAs[tally](context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, msgs)
	if len(got) != 0 || err == nil || err.Error() != strings.Replace(wantText, "solution 1", "solution 0", 1) {
		t.Errorf("got %+v, %v; want no result and the decode error", got, err)
	}
}
