package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

func TestParseIdea(t *testing.T) {
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"object"},"context":[{"type":"input","city":"Paris"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(idea.Context) != 1 || idea.Context[0].Kind != "input" {
		t.Errorf("context %+v", idea.Context)
	}
	for in, want := range map[string]string{
		`[]`:             "must be a JSON object",
		`{"context":[]}`: `field "schema" is missing`,
		`{"schema":{},"context":[{"type":"data","kind":"!"}]}`: "message 0",
		`{"schema":{}`: "unexpected end",
		// A syntax error says where it is, counting characters, not bytes.
		"{\n  \"schema\": {},\n  \"context\": [{\"type\": \"text\", \"text\": \"Grüß\",}]\n}": `line 3, column 47: invalid character '}'`,
		// A misspelt field is not dropped: the Idea would run without it.
		`{"schema":{},"contxt":[{"type":"text","text":"hi"}]}`:             `unknown field "contxt" (known: schema, context,`,
		`{"schema":{},"presets":{"P":{"messages":[],"maxTokns":5}}}`:       `presets["P"]: unknown field "maxTokns"`,
		`{"schema":{},"mcp":[{"url":"http://x","prefix":"a_","nme":"x"}]}`: `mcp[0]: unknown field "nme"`,
	} {
		_, err := agent.ParseIdea([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseIdea(%s) = %v, want %q", in, err, want)
		}
	}
	// A "$" key is an annotation, not a misspelt field: an editor reads
	// "$schema" to check the file, and Ideas carried it before unknown
	// fields were refused.
	for _, in := range []string{
		`{"$schema":"https://example.com/idea.schema.json","schema":{},"context":[]}`,
		`{"$comment":"v2","schema":{},"presets":{"P":{"$comment":"terse","messages":[]}},"mcp":[{"$comment":"x","url":"http://x"}]}`,
	} {
		if _, err := agent.ParseIdea([]byte(in)); err != nil {
			t.Errorf("ParseIdea(%s) = %v, want no error", in, err)
		}
	}
	_, err = agent.ParseIdea([]byte(`{"schema":{},"context":[{"type":"data","kind":"!"}]}`))
	var me *message.Error
	if !errors.As(err, &me) || me.Index != 0 || me.Field != "kind" {
		t.Errorf("got %v, want a *message.Error at message 0", err)
	}
}

func TestIdeaSaveWithSolution(t *testing.T) {
	p := scripted.Solutions(`{"output":{"capital":"Paris"}}`)
	schema := json.RawMessage(`{"type":"object","properties":{"capital":{"type":"string"}},"required":["capital"]}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p}, schema, ctxOf(t, `[{"type":"text","text":"Capital of France?"}]`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := res.Idea(schema).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := agent.ParseIdea(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, back.Schema)
	if compact.String() != string(schema) || len(back.Context) != res.Log.Len() || !strings.Contains(string(back.Solution), `"Paris"`) {
		t.Errorf("round trip:\n%s", b)
	}
	again, _ := back.Marshal()
	if string(again) != string(b) {
		t.Errorf("saving again changed the file:\n%s\n%s", b, again)
	}
	if _, err := (&agent.Idea{}).Marshal(); err == nil {
		t.Error("an Idea with no schema saved")
	}
}

func TestIdeaRendering(t *testing.T) {
	idea, err := agent.ParseIdea([]byte(`{"schema":{},"context":[],"rendering":"snapshot"}`))
	if err != nil || idea.Rendering != agent.RenderSnapshot {
		t.Fatalf("rendering %q, %v", idea.Rendering, err)
	}
	b, err := idea.Marshal()
	if err != nil || !strings.Contains(string(b), `"rendering": "snapshot"`) {
		t.Errorf("marshalled %s, %v", b, err)
	}
	if _, err := agent.ParseIdea([]byte(`{"schema":{},"rendering":"fancy"}`)); !errors.Is(err, agent.ErrRendering) {
		t.Errorf("an unknown rendering: %v", err)
	}
	_, err = agent.Request(context.Background(), agent.Config{Provider: scripted.Solutions(`{"output":1}`), Rendering: "fancy"}, json.RawMessage(`{}`), nil)
	if !errors.Is(err, agent.ErrRendering) {
		t.Errorf("a Config with an unknown rendering: %v", err)
	}
}
