package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/schema"
)

// naiveArgs is Call.Args as first written: every key unquoted and quoted
// again.
func naiveArgs(params json.RawMessage) json.RawMessage {
	if !json.Valid(params) {
		return params
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	if t, _ := dec.Token(); t != json.Delim('{') {
		return params
	}
	b := []byte{'{'}
	for dec.More() {
		t, _ := dec.Token()
		var v json.RawMessage
		_ = dec.Decode(&v)
		if k := t.(string); !strings.HasPrefix(k, "_") {
			if len(b) > 1 {
				b = append(b, ',')
			}
			var kb bytes.Buffer
			enc := json.NewEncoder(&kb)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(k)
			b = append(append(append(b, bytes.TrimSpace(kb.Bytes())...), ':'), v...)
		}
	}
	return append(b, '}')
}

type echoParams struct {
	X    int    `json:"x"`
	N    int8   `json:"n,omitempty"`
	OK   bool   `json:"ok"`
	Name string `json:"name,omitempty"`
	U    uint   `json:"U,omitempty"`
}

// object reports whether s is a JSON object or not JSON at all: the
// parameters of a call are an object once checked against its tool, and
// Args of other JSON values is not defined.
func object(s string) bool {
	return !json.Valid([]byte(s)) || strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{")
}

var argsSeeds = []string{
	`{"_tool":"t","x":1,"_outputPath":"†state.r"}`, `{"x":1,"ok":true,"name":"a<b"}`, `{"\u005ftool":"t","x":1}`,
	`{"x":1,"ok":false,"name":"é\n"}`, `{"": 1, "x" : 2 ,"ok":true}`, `{"x":-3,"n":-128,"ok":true,"U":7,"name":"\"q\""}`,
	`{"_scopes":["a",{"b":"}]"}],"x":1,"ok":true,"_n":-1.5e3}`, `{"x":1,"ok":true,"_":null}`, `{"_x":1,"x":1,"ok":true,"_x":2}`,
	`[1]`, `{"x":1`, `{"x":1,"ok":true,"name":"a&b"}`, `{"ok":true,"x":1,"x":2}`, "{\"k\xff\":1}",
}

func FuzzCallArgs(f *testing.F) {
	for _, s := range argsSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !object(s) {
			return
		}
		c := &agent.Call{Params: json.RawMessage(s)}
		if got, want := c.Args(), naiveArgs(c.Params); !bytes.Equal(got, want) {
			t.Fatalf("Args(%q) = %s, want %s", s, got, want)
		}
	})
}

// FuzzBind checks that a bound function sees what schema.Decode gives and
// that its result is what json.Marshal writes.
func FuzzBind(f *testing.F) {
	for _, s := range argsSeeds {
		f.Add(s)
	}
	a := agent.Bind(func(_ context.Context, p echoParams) (echoParams, error) { return p, nil })
	f.Fuzz(func(t *testing.T, s string) {
		if !object(s) {
			return
		}
		c := &agent.Call{Params: json.RawMessage(s)}
		res, err := a.Run(context.Background(), c)
		p, werr := schema.Decode[echoParams](naiveArgs(c.Params))
		if (err == nil) != (werr == nil) {
			t.Fatalf("Run(%q) error %v, want %v", s, err, werr)
		}
		if err != nil {
			if !strings.HasSuffix(err.Error(), werr.Error()) {
				t.Fatalf("Run(%q) error %q, want it to end in %q", s, err, werr)
			}
			return
		}
		want, _ := json.Marshal(p)
		if !bytes.Equal(res.Value, want) {
			t.Fatalf("Run(%q) = %s, want %s", s, res.Value, want)
		}
	})
}

// TestActivityRegisteredLater checks that an activity registered after a
// tool's calls ran takes the next calls: a tool's resolved activity is
// kept only until the registry changes. The tool names its activity, so
// the model sees it the same before and after.
func TestActivityRegisteredLater(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("t", json.RawMessage(`{"type":"object","_activity":"impl","properties":{"x":{"type":"integer"}}}`))
	msgs := []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`"t"`)}, message.Text("go")}
	run := func() *message.Log {
		p := scripted.Solutions(`{"calls":[{"_tool":"t","x":1,"_outputPath":"†state.a"}],"output":null}`, `{"calls":[],"output":{}}`)
		res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), msgs)
		if err != nil {
			t.Fatal(err)
		}
		return res.Log
	}
	l := run()
	if _, ok, _ := l.Value(message.Identity{Kind: "state"}); ok || !strings.Contains(marshal(t, l.Messages()), "not registered") {
		t.Fatalf("before the activity was registered: %s", marshal(t, l.Messages()))
	}
	reg.Activity("impl", agent.Bind(func(ctx context.Context, p struct {
		X int `json:"x"`
	}) (map[string]int, error) {
		return map[string]int{"y": 7}, nil
	}))
	if v, _, err := run().Value(message.Identity{Kind: "state"}); err != nil || string(v) != `{"a":{"y":7}}` {
		t.Fatalf("after the activity was registered: state %s, %v", v, err)
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestActivityMessagesTheRunCannotRender: an activity's Messages that no
// request could render (a type without a handler, a tool or an advisor
// the registry lacks) fail the call, as a write that does not combine
// does: appended, they would fail every later request of the run, and
// every resume of it.
func TestActivityMessagesTheRunCannotRender(t *testing.T) {
	for _, tt := range []struct {
		name string
		msg  message.Message
		want string
	}{
		{"type", message.Message{Type: "bogus"},
			`runtime error in emit: its messages were not written: message 1 (bogus): no handler for message type "bogus" (types: advisor, compaction, data, error, meta, plan, preset, text, tool; register one with Registry.Handle)`},
		{"tool", message.Tool("ghost"),
			`runtime error in emit: its messages were not written: message 1 (tool): unknown tool "ghost" (registered: emit)`},
		{"advisor", message.Message{Type: message.TypeAdvisor, Advisor: &message.Advisor{Name: "ghost", On: "request"}},
			`runtime error in emit: its messages were not written: message 1 (advisor): unknown advisor "ghost" (no advisor is registered)`},
		{"inline tool", message.Message{Type: message.TypeTool, Tool: json.RawMessage(`{"bad":{"type":5}}`)},
			"runtime error in emit: its messages were not written: message 1 (tool): tool \"bad\": schema: invalid schema: at /type: matches none of the 2 alternatives:\n" +
				"  alternative 0:\n    at /type: expected one of \"array\", \"boolean\", \"integer\", \"null\", \"number\", \"object\", \"string\", got 5\n" +
				"  alternative 1:\n    at /type: expected array, got number"},
		{"preset", message.Message{Type: message.TypePreset, Extra: json.RawMessage(`{"preset":"ghost"}`)},
			`runtime error in emit: its messages were not written: message 1 (preset): unknown preset "ghost" (no preset is registered)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("emit", json.RawMessage(`{"type":"object","properties":{}}`))
			reg.Activity("emit", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				return &agent.Result{Messages: []message.Message{message.Text("before it"), tt.msg}}, nil
			}))
			p := scripted.Solutions(`{"calls":[{"_tool":"emit","_outputPath":"†state.x"}],"output":null}`, `{"calls":[],"output":1}`)
			res, err := agent.Run(context.Background(), agent.Config{Registry: reg, Provider: p}, json.RawMessage(`{"type":"integer"}`),
				ctxOf(t, `[{"type":"tool","tool":"emit"},{"type":"text","text":"go"}]`))
			if err != nil {
				t.Fatal(err)
			}
			if got := errorTexts(res.Log); len(got) != 1 || got[0] != tt.want {
				t.Errorf("errors %q\nwant %q", got, tt.want)
			}
			for _, m := range res.Log.Messages() {
				if m.Type == message.TypeText && m.Text == "before it" {
					t.Error("a message of the call's result was written")
				}
			}
		})
	}
}

// An activity's preset message is expanded as a context's is: appended
// as it was, the next request would refuse it as not expanded.
func TestActivityMessagesPresetExpanded(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Preset("Brief", agent.Preset{Messages: []message.Message{message.Text("Be brief.")}})
	reg.Tool("emit", json.RawMessage(`{"type":"object","properties":{}}`))
	reg.Activity("emit", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Messages: []message.Message{{Type: message.TypePreset, Extra: json.RawMessage(`{"preset":"Brief"}`)}}}, nil
	}))
	p := scripted.Solutions(`{"calls":[{"_tool":"emit","_outputPath":"†state.x"}],"output":null}`, `{"calls":[],"output":1}`)
	res, err := agent.Run(context.Background(), agent.Config{Registry: reg, Provider: p}, json.RawMessage(`{"type":"integer"}`),
		ctxOf(t, `[{"type":"tool","tool":"emit"},{"type":"text","text":"go"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if errs := errorTexts(res.Log); len(errs) != 0 {
		t.Errorf("errors %q", errs)
	}
	var said bool
	for _, m := range p.Requests()[1].Messages {
		said = said || strings.Contains(m.Text, "Be brief.")
	}
	if !said {
		t.Error("the next request does not say the preset's message")
	}
}

// TestActivityMessagesCountedAsReturned: an error of an activity's
// messages counts them as the activity returned them, not as its presets
// expanded them, and says which message of a preset it was.
func TestActivityMessagesCountedAsReturned(t *testing.T) {
	for _, tt := range []struct {
		name string
		msgs []message.Message
		want string
	}{
		{"after a preset", []message.Message{message.Text("a"), {Type: message.TypePreset, Extra: json.RawMessage(`{"preset":"Three"}`)}, {Type: "bogus"}},
			`message 2 (bogus): no handler for message type "bogus"`},
		{"in a preset", []message.Message{message.Text("a"), {Type: message.TypePreset, Extra: json.RawMessage(`{"preset":"Ghostly"}`)}},
			`message 1 (preset), its message 1 (tool): unknown tool "ghost"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Preset("Three", agent.Preset{Messages: []message.Message{message.Text("1"), message.Text("2"), message.Text("3")}})
			reg.Preset("Ghostly", agent.Preset{Messages: []message.Message{message.Text("1"), message.Tool("ghost")}})
			reg.Tool("emit", json.RawMessage(`{"type":"object","properties":{}}`))
			reg.Activity("emit", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				return &agent.Result{Messages: tt.msgs}, nil
			}))
			p := scripted.Solutions(`{"calls":[{"_tool":"emit","_outputPath":"†state.x"}],"output":null}`, `{"calls":[],"output":1}`)
			res, err := agent.Run(context.Background(), agent.Config{Registry: reg, Provider: p}, json.RawMessage(`{"type":"integer"}`),
				ctxOf(t, `[{"type":"tool","tool":"emit"},{"type":"text","text":"go"}]`))
			if err != nil {
				t.Fatal(err)
			}
			if got := errorTexts(res.Log); len(got) != 1 || !strings.Contains(got[0], "its messages were not written: "+tt.want) {
				t.Errorf("errors %q\nwant one with %q", got, tt.want)
			}
		})
	}
}

// TestActivityEmptyValue: a Result whose Value is an empty RawMessage
// (what an empty buffer or body gives) is no value, as nil is: null is
// written, rather than the call failing as not valid JSON; and, like nil,
// it is not checked against the tool's _output.
func TestActivityEmptyValue(t *testing.T) {
	for _, tt := range []struct {
		name  string
		value json.RawMessage
	}{
		{"nil", nil},
		{"empty", json.RawMessage("")},
		{"empty, not nil", json.RawMessage{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := agent.NewRegistry()
			reg.Tool("t", json.RawMessage(`{"type":"object","_activity":"impl","properties":{"x":{"type":"integer"},"_output":{"type":"object"}}}`))
			res := &agent.Result{Value: tt.value}
			reg.Activity("impl", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				return res, nil
			}))
			p := scripted.Solutions(`{"calls":[{"_tool":"t","x":1,"_outputPath":"†state.a"}],"output":null}`, `{"calls":[],"output":{}}`)
			msgs := []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`"t"`)}, message.Text("go")}
			out, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), msgs)
			if err != nil {
				t.Fatal(err)
			}
			if v, _, err := out.Log.Value(message.Identity{Kind: "state"}); err != nil || string(v) != `{"a":null}` {
				t.Errorf("state %s, %v; want {\"a\":null}: %s", v, err, marshal(t, out.Log.Messages()))
			}
			if (res.Value == nil) != (tt.value == nil) {
				t.Errorf("the activity's Result was changed: Value %q", res.Value)
			}
		})
	}
}
