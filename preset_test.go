package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
)

func TestPresets(t *testing.T) {
	reg := agent.NewRegistry()
	temp := 0.2
	reg.Preset("Persona", agent.Preset{
		Messages: []message.Message{
			{Type: message.TypeText, Role: message.RoleSystem, Text: "You are a careful chess coach."},
			{Type: message.TypePreset, Extra: json.RawMessage(`{"preset":"Rules"}`)},
		},
		Model: "coach-model", Temperature: &temp,
	})
	reg.Preset("Rules", agent.Preset{Messages: []message.Message{
		{Type: message.TypeData, Kind: "rules", Data: json.RawMessage(`{"timeControl":"5+3"}`)},
	}})
	p := scripted.Solutions(`{"output":{"ok":true}}`)
	msgs := ctxOf(t, `[{"type":"preset","preset":"Persona"},{"type":"text","text":"Review my game."}]`)
	if _, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object"}`), msgs); err != nil {
		t.Fatal(err)
	}
	req := p.Requests()[0]
	var texts []string
	for _, m := range req.Messages {
		texts = append(texts, m.Text)
	}
	all := strings.Join(texts, "\n")
	// The preset's messages stand where it was named, nested presets
	// included, and its settings apply.
	if !strings.HasPrefix(all, "You are a careful chess coach.\n## Data: ¶rules") || !strings.HasSuffix(all, "Review my game.") {
		t.Errorf("messages:\n%s", all)
	}
	if req.Model != "coach-model" || req.Temperature == nil || *req.Temperature != 0.2 {
		t.Errorf("settings: model %q, temperature %v", req.Model, req.Temperature)
	}
	// Expanded once: a journaled context is not expanded again.
	expanded, err := agent.ExpandPresets(reg, nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := agent.ExpandPresets(reg, nil, expanded)
	if err != nil || len(again) != len(expanded) || len(expanded) != 5 {
		t.Errorf("expanded to %d messages, then %d: %v", len(expanded), len(again), err)
	}
}

func TestPresetErrors(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Preset("Loop", agent.Preset{Messages: []message.Message{{Type: message.TypePreset, Extra: json.RawMessage(`{"preset":"Loop"}`)}}})
	for _, tt := range []struct {
		name, ctx, want string
		is              error
	}{
		{"unknown", `[{"type":"text","text":"a"},{"type":"preset","preset":"Nope"}]`, `agent: context: message 1 (preset): unknown preset "Nope" (presets: Loop)`, agent.ErrUnknownPreset},
		{"no name", `[{"type":"preset"}]`, `agent: context: message 0 (preset): a preset message names its preset: {"type":"preset","preset":"Name"}`, nil},
		{"a loop", `[{"type":"preset","preset":"Loop"}]`, `agent: context: message 0 (preset): preset "Loop" names itself through Loop`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agent.Request(context.Background(), agent.Config{Provider: scripted.Solutions(`{"output":1}`), Registry: reg}, json.RawMessage(`{}`), ctxOf(t, tt.ctx))
			if err == nil || err.Error() != tt.want || tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("got %v\nwant %s", err, tt.want)
			}
		})
	}
	// With none, the error says there is none, not an empty list.
	_, err := agent.ExpandPresets(agent.NewRegistry(), nil, ctxOf(t, `[{"type":"preset","preset":"Nope"}]`))
	if want := `agent: message 0 (preset): unknown preset "Nope" (no preset is registered)`; err == nil || err.Error() != want {
		t.Errorf("no presets: got %v\nwant %s", err, want)
	}
}

// TestIdeaPresets saves presets in an Idea file: its context names them,
// and a durable run journals the expanded context once.
func TestIdeaPresets(t *testing.T) {
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"object"},"presets":{"Greeter":{"messages":[{"type":"text","role":"system","text":"Greet warmly."}],"maxTokens":99}},
		"context":[{"type":"preset","preset":"Greeter"},{"type":"text","text":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := idea.Marshal()
	if err != nil || !strings.Contains(string(b), `"Greeter"`) {
		t.Fatalf("marshalled %s, %v", b, err)
	}
	reg := agent.NewRegistry()
	msgs, err := agent.ExpandPresets(reg, idea.Presets, idea.Context)
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	p := scripted.Solutions(`{"output":{}}`)
	if _, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Store: st, RunID: "r"}, idea.Schema, msgs); err != nil {
		t.Fatal(err)
	}
	if req := p.Requests()[0]; req.MaxTokens != 99 || req.Messages[0].Text != "Greet warmly." {
		t.Errorf("request %+v", req)
	}
	presets := 0
	for _, e := range journal(t, st, "r") {
		if e.Type == store.EntryMessage && strings.Contains(string(e.Data), `"preset"`) {
			presets++
		}
	}
	if presets != 1 {
		t.Errorf("%d preset messages journaled, want 1", presets)
	}
}

// TestPresetIsACopy: a registry keeps its own copy of a preset, as of a
// tool's definition, and ExpandPresets hands out messages the caller
// owns: writing over either changes no later expansion.
func TestPresetIsACopy(t *testing.T) {
	reg := agent.NewRegistry()
	temp := 0.2
	in := []message.Message{{Type: message.TypeData, Kind: "state", Data: json.RawMessage(`{"a":1}`)}}
	reg.Preset("P", agent.Preset{Messages: in, Temperature: &temp})
	scribble(in[0].Data)
	temp = 1.5
	expand := func() []message.Message {
		t.Helper()
		out, err := agent.ExpandPresets(reg, nil, []message.Message{{Type: message.TypePreset, Extra: json.RawMessage(`{"preset":"P"}`)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 2 || string(out[0].Extra) != `{"preset":"P","expanded":true,"temperature":0.2}` || string(out[1].Data) != `{"a":1}` {
			t.Fatalf("expanded to %s %s", out[0].Extra, out[1].Data)
		}
		return out
	}
	scribble(expand()[1].Data)
	expand()
}
