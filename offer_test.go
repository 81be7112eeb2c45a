package agent_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
)

func TestOffer(t *testing.T) {
	reg := agent.NewRegistry()
	if err := agent.Func(reg, "forecast", "Daily highs in a city", forecastFunc); err != nil {
		t.Fatal(err)
	}
	reg.Tool("summarize", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"_output":{"type":"string"}}}`))

	for _, tt := range []struct {
		name  string
		names []string
		want  string
	}{
		{"all, by name", nil, `{"forecast":` + forecastDef + `,"summarize":{"type":"object","properties":{"text":{"type":"string"},"_output":{"type":"string"}}}}`},
		{"in the order named", []string{"summarize", "Tool.forecast"}, `{"summarize":{"type":"object","properties":{"text":{"type":"string"},"_output":{"type":"string"}}},"forecast":` + forecastDef + `}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := reg.Offer(tt.names...)
			if err != nil {
				t.Fatal(err)
			}
			if m.Type != message.TypeTool || string(m.Tool) != tt.want {
				t.Errorf("got %s %s\nwant tool %s", m.Type, m.Tool, tt.want)
			}
		})
	}

	if _, err := reg.Offer("forecast", "nope"); !errors.Is(err, agent.ErrUnknownTool) || !strings.Contains(err.Error(), `"nope" (registered: forecast, summarize)`) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := agent.NewRegistry().Offer(); !errors.Is(err, agent.ErrUnknownTool) {
		t.Errorf("empty registry: %v", err)
	}
	// An empty list of registered tools says there are none.
	const none = `agent: unknown tool "nope" (no tool is registered)`
	if _, err := agent.NewRegistry().Offer("nope"); err == nil || err.Error() != none {
		t.Errorf("Offer of an empty registry: %v, want %s", err, none)
	}
	if _, err := agent.NewRegistry().LookupTool("nope"); err == nil || err.Error() != none {
		t.Errorf("LookupTool of an empty registry: %v, want %s", err, none)
	}
	if got, want := reg.ToolNames(), []string{"forecast", "summarize"}; !cmp.Equal(got, want) {
		t.Errorf("ToolNames() = %q, want %q", got, want)
	}
	if got := agent.NewRegistry().ToolNames(); len(got) != 0 {
		t.Errorf("ToolNames() of an empty registry = %q", got)
	}

	// The model sees the same request whether the tool is named or offered
	// with its definition.
	offered, err := reg.Offer("forecast")
	if err != nil {
		t.Fatal(err)
	}
	gotReqs, _ := runForecast(t, reg, offered)
	wantReqs, _ := runForecast(t, reg, message.Tool("forecast"))
	if diff := cmp.Diff(gotReqs, wantReqs); diff != "" {
		t.Errorf("requests (-Offer +message.Tool):\n%s", diff)
	}
}
