package telemetry_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/message"
	anthropicapi "github.com/augceo/agent/provider/anthropic"
)

func TestMetricsAnthropicCache(t *testing.T) {
	// A run of two steps against the fake of Anthropic's API that models
	// its prompt cache: the first request writes the prompt to the cache,
	// the second reads it. The input tokens measured count the cached
	// ones, as the conventions do; the cache's share is on the spans. The
	// model that answered is the one the API's message names.
	answers := []string{`{"calls":[{"_tool":"note","v":1,"_outputPath":"†state.a"}],"output":null}`, `{"calls":[],"output":{"done":true}}`}
	var next atomic.Int64
	srv := strict.NewAnthropic(t, func(*strict.Request, int) (string, error) { return answers[next.Add(1)-1], nil })
	p, err := anthropicapi.New(anthropicapi.Config{APIKey: "sk-ant-test", BaseURL: srv.URL, Model: "claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	tr, rec, reader := measuring(t)
	reg := agent.NewRegistry()
	reg.Tool("note", json.RawMessage(`{"type":"object","description":"Writes a note.","properties":{"v":{"type":"integer"}},"required":["v"]}`))
	reg.Activity("note", agent.Bind(func(ctx context.Context, p struct {
		V int `json:"v"`
	}) (int, error) {
		return p.V, nil
	}))
	msgs := []message.Message{
		{Type: message.TypeText, Role: message.RoleSystem, Text: strings.Repeat("You keep notes of the day's work, one per step, and stop when told to. ", 200)},
		{Type: message.TypeTool, Tool: json.RawMessage(`"note"`)},
		message.Text("Write a note, then stop."),
	}
	cfg := agent.Config{Provider: p, Registry: reg, Model: "claude-test", Clock: fixed, Logger: slog.New(slog.DiscardHandler)}
	res, err := tr.Run(context.Background(), cfg, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`), msgs)
	if err != nil {
		t.Fatal(err)
	}
	u := res.Usage
	if u.CacheRead == 0 || u.CacheWrite == 0 {
		t.Fatalf("the run used %+v: the cache was not written and read", u)
	}
	in, out := float64(u.Input+u.CacheRead+u.CacheWrite), float64(u.Output+u.Thinking)
	base, _ := url.Parse(srv.URL)
	attrs := "gen_ai.operation.name=chat gen_ai.provider.name=anthropic gen_ai.request.model=claude-test gen_ai.response.model=claude-test server.address=" + base.Hostname() + " server.port=" + base.Port()
	want := []point{
		{"gen_ai.client.operation.duration", attrs, 2, 0},
		// The fake streams the two answers in 10 chunks: 8 after a first.
		{"gen_ai.client.operation.time_per_output_chunk", attrs, 8, 0},
		{"gen_ai.client.operation.time_to_first_chunk", attrs, 2, 0},
		{"gen_ai.client.token.usage", with(attrs, "gen_ai.token.type=input"), 2, in},
		{"gen_ai.client.token.usage", with(attrs, "gen_ai.token.type=output"), 2, out},
	}
	if d := cmp.Diff(points(t, reader), want); d != "" {
		t.Errorf("measurements (-got +want):\n%s", d)
	}
	if sin, sout := spanTokens(rec.Ended()); sin != in || sout != out {
		t.Errorf("the request spans count %v input, %v output tokens; the measurements %v, %v", sin, sout, in, out)
	}
}
