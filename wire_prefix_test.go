package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/anthropic"
	"github.com/augceo/agent/store"
)

// wirePrompt splits a request body as a provider's prompt cache reads it:
// the prompt, one entry per block in order (role and text; Anthropic's
// system blocks and Gemini's systemInstruction first), and the rest of
// the body (model, schema, settings). Anthropic's cache_control markers
// are left out: they say where to cache, and are not part of the prefix.
func wirePrompt(t *testing.T, provider string, body []byte) (prompt []string, rest string) {
	t.Helper()
	var b map[string]json.RawMessage
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("body: %v", err)
	}
	type part struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	type content struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	add := func(role string, parts []part) {
		for _, p := range parts {
			prompt = append(prompt, role+": "+p.Type+": "+p.Text)
		}
	}
	decode := func(key string, v any) {
		if raw, ok := b[key]; ok {
			if err := json.Unmarshal(raw, v); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			delete(b, key)
		}
	}
	switch provider {
	case "openai":
		var msgs []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		decode("messages", &msgs)
		for _, m := range msgs {
			prompt = append(prompt, m.Role+": "+m.Content)
		}
	case "anthropic":
		var system []part
		var msgs []struct {
			Role    string `json:"role"`
			Content []part `json:"content"`
		}
		decode("system", &system)
		decode("messages", &msgs)
		add("system", system)
		for _, m := range msgs {
			add(m.Role, m.Content)
		}
	case "gemini":
		var system content
		var contents []content
		decode("systemInstruction", &system)
		decode("contents", &contents)
		add("system", system.Parts)
		for _, c := range contents {
			add(c.Role, c.Parts)
		}
	}
	restBytes, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return prompt, string(restBytes)
}

// TestWirePrefix runs an agent through each adapter, against the fake of
// its provider's API, for steps with calls that write state, a latent
// call (a request of its own), a call that fails, an answer the schema
// refuses, then a second turn of the conversation (Continue) that adds a
// system message: each request of the loop, as sent on the wire, must
// start with every block of the loop's request before it, byte for byte,
// with the same schema and settings, so that the provider's prompt cache
// can serve all of it. -v logs the size of each request.
func TestWirePrefix(t *testing.T) {
	answers := []string{
		`{"calls":[{"_tool":"note","v":1,"_outputPath":"†state.s1"},{"_tool":"note","v":1,"_outputPath":"†state.items","_outputMethod":"push"}],"output":null}`,
		`{"calls":[{"_tool":"summarize","notes":"†state.items","_outputPath":"†state.sum"},{"_tool":"note","v":"†state.missing","_outputPath":"†state.s2"}],"output":null}`,
		`{"calls":[{"_tool":"note","v":"two"}],"output":null}`, // refused: v is an integer, and the step fails
		`{"calls":[{"_tool":"note","v":2,"_outputPath":"†state.s2"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`,
	}
	turn := len(answers) // the second turn's answers follow
	answers = append(answers,
		`{"calls":[{"_tool":"note","v":3,"_outputPath":"†state.s3"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`)
	for _, ad := range strictAdapters {
		t.Run(ad.name, func(t *testing.T) {
			var next atomic.Int64
			p, srv := ad.start(t, func(r *strict.Request, _ int) (string, error) {
				if strings.Contains(r.Text(), "Carry out the tool summarize") {
					return `{"output":{"summary":"one note"}}`, nil
				}
				return answers[next.Add(1)-1], nil
			})
			reg, _ := cacheAgent(1)
			cfg := agent.Config{Provider: p, Registry: reg, MaxSteps: 10, Clock: fixed, Concurrency: 1, Store: store.NewMemory(), RunID: "r"}
			res, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`), cacheContext())
			if err != nil {
				t.Fatal(err)
			}
			if int(next.Load()) != turn || res.Steps != turn {
				t.Fatalf("%d answers of the loop used, %d steps; want %d of each", next.Load(), res.Steps, turn)
			}
			if _, err := agent.Continue(context.Background(), cfg, "r", message.System("From now on, answer in French."), message.Text("Once more, please.")); err != nil {
				t.Fatal(err)
			}
			checkWirePrefix(t, strings.TrimSuffix(ad.name, "-json"), srv.Requests(), len(answers))
		})
	}
}

// checkWirePrefix checks that the requests of the loop among reqs (those
// whose prompt starts with cacheContext's system message; the others are
// latent calls' own), want of them, each start with the prompt of the one
// before, block for block, with the rest of the body unchanged. It logs
// the size of each request.
func checkWirePrefix(t *testing.T, provider string, reqs []*strict.Request, want int) {
	t.Helper()
	var loop [][]string
	var rest []string
	var sizes []string
	for _, r := range reqs {
		sizes = append(sizes, strconv.Itoa(len(r.Body)))
		prompt, settings := wirePrompt(t, provider, r.Body)
		if len(prompt) == 0 || !strings.Contains(prompt[0], "operations assistant") {
			continue // a latent call's own request
		}
		loop, rest = append(loop, prompt), append(rest, settings)
	}
	t.Logf("bytes sent, request by request: %s", strings.Join(sizes, " / "))
	if len(loop) != want {
		t.Fatalf("%d requests of the loop, want %d", len(loop), want)
	}
	for i := 1; i < len(loop); i++ {
		prev, cur := loop[i-1], loop[i]
		if rest[i] != rest[i-1] {
			t.Errorf("request %d: the body besides the prompt changed %s", i+1, firstDiff(rest[i-1], rest[i]))
		}
		if len(cur) <= len(prev) {
			t.Errorf("request %d has %d blocks, the one before %d", i+1, len(cur), len(prev))
			continue
		}
		for k := range prev {
			if prev[k] != cur[k] {
				t.Errorf("request %d: block %d of %d changed %s", i+1, k+1, len(prev), firstDiff(prev[k], cur[k]))
				break
			}
		}
	}
}

// TestWirePrefixAnthropicTool: a composed schema over the limits of
// Anthropic's structured outputs (twelve tools with optional parameters)
// goes as a forced tool, first in the cached prefix, with a breakpoint of
// its own: the loop's requests extend each other there too.
func TestWirePrefixAnthropicTool(t *testing.T) {
	answers := []string{
		`{"calls":[{"_tool":"note","v":1,"_outputPath":"†state.s1"},{"_tool":"lookup3","id":"r1","_outputPath":"†state.r1"}],"output":null}`,
		`{"calls":[{"_tool":"note","v":2,"_outputPath":"†state.s2"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`,
	}
	var next atomic.Int64
	srv := strict.NewAnthropic(t, func(*strict.Request, int) (string, error) { return answers[next.Add(1)-1], nil })
	p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: srv.URL, Model: "claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := cacheAgent(1)
	msgs := cacheContext()
	for i := range 12 {
		name := fmt.Sprintf("lookup%d", i)
		reg.Tool(name, json.RawMessage(`{"type":"object","description":"Looks up a record.","properties":{"id":{"type":"string"},"limit":{"type":"integer"},"since":{"type":"string"},"filter":{"type":["string","null"]}},"required":["id"]}`))
		reg.Activity(name, agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
			return &agent.Result{Value: json.RawMessage(`{"found":true}`)}, nil
		}))
		msgs = append(msgs, message.Tool(name))
	}
	cfg := agent.Config{Provider: p, Registry: reg, MaxSteps: 5, Clock: fixed, Concurrency: 1}
	if _, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`), msgs); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	for _, r := range reqs {
		if r.Field != "tools/solution" {
			t.Fatalf("the schema went in %q, want a forced tool", r.Field)
		}
	}
	checkWirePrefix(t, "anthropic", reqs, len(answers))
}
