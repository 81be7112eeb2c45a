package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

// A run whose registry has activities while its context offers no tool
// warns once, at its start, through Config.Logger: the model cannot call
// what it is not offered. Other runs do not.
func TestRunWarnsWhenNoToolIsOffered(t *testing.T) {
	const warning = `level=WARN msg="the context offers no tool, so the model cannot call the registered activities; offer tools with tool messages (message.Tool, Registry.Offer)" activities="[forecast summarize]"` + "\n"
	withActivities := func() *agent.Registry {
		reg := agent.NewRegistry()
		if err := agent.Func(reg, "forecast", "Daily highs in a city", forecastFunc); err != nil {
			t.Fatal(err)
		}
		reg.Activity("summarize", agent.Bind(func(_ context.Context, p struct {
			Text string `json:"text"`
		}) (string, error) {
			return p.Text, nil
		}))
		return reg
	}
	// A delegate's sub-run has no tool, and must not warn.
	delegating := func() *agent.Registry {
		reg := withActivities()
		reg.Tool("ask", json.RawMessage(`{"type":"object","description":"Answer the question.","properties":{"q":{"type":"string"},"_output":{"type":"string"}},"_delegate":"anonymous"}`))
		return reg
	}
	for _, tt := range []struct {
		name    string
		reg     *agent.Registry
		msgs    []message.Message
		answers []string
		want    string
	}{
		{"activities, no tool", withActivities(), []message.Message{message.Text("Hi")},
			[]string{`{"output":"hello"}`}, warning},
		{"a tool offered", withActivities(), []message.Message{message.Tool("forecast"), message.Text("Hi")},
			[]string{`{"calls":[],"output":"hello"}`}, ""},
		{"no activities", agent.NewRegistry(), []message.Message{message.Text("Hi")},
			[]string{`{"output":"hello"}`}, ""},
		{"warned once in a longer run", withActivities(), []message.Message{message.Text("Hi")},
			[]string{`{"output":null}`, `{"output":"hello"}`}, warning},
		{"a delegate's sub-run", delegating(), []message.Message{message.Tool("ask"), message.Text("Hi")},
			[]string{`{"calls":[{"_tool":"ask","q":"why?","_outputPath":"†state.a"}],"output":null}`, `{"output":"because"}`, `{"calls":[],"output":"hello"}`}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}})
			cfg := agent.Config{Provider: scripted.Solutions(tt.answers...), Registry: tt.reg, Logger: slog.New(h), Clock: fixed}
			res, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), tt.msgs)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Solution.Output) != `"hello"` {
				t.Errorf("output %s", res.Solution.Output)
			}
			if diff := cmp.Diff(logs.String(), tt.want); diff != "" {
				t.Errorf("log (-got +want):\n%s", diff)
			}
		})
	}
}

// A Request is not a run: it never warns, whatever the registry holds.
func TestRequestDoesNotWarn(t *testing.T) {
	reg := agent.NewRegistry()
	if err := agent.Func(reg, "forecast", "", forecastFunc); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cfg := agent.Config{Provider: scripted.Solutions(`{"output":"hi"}`), Registry: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if _, err := agent.Request(context.Background(), cfg, json.RawMessage(`{"type":"string"}`), []message.Message{message.Text("Hi")}); err != nil {
		t.Fatal(err)
	}
	if logs.Len() > 0 {
		t.Errorf("log %q", logs.String())
	}
}
