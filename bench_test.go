package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

// replay is a zero-latency model: it answers request i with answers[i%len].
type replay struct{ answers []string }

func (r *replay) provider() provider.Provider {
	i := 0
	return provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			a := r.answers[i%len(r.answers)]
			i++
			yield(&provider.Chunk{Text: a, Done: true, Usage: &provider.Usage{Input: 100, Output: 50}}, nil)
		}
	})
}

// tenTools registers t0…t9, each returning {"y": x+1}, as in the issue.
func tenTools() (*agent.Registry, []message.Message) {
	reg := agent.NewRegistry()
	var msgs []message.Message
	for i := range 10 {
		name := fmt.Sprintf("t%d", i)
		reg.Tool(name, json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"},"_output":{"type":"object","properties":{"y":{"type":"integer"}}}},"required":["x"]}`))
		reg.Activity(name, agent.Bind(func(ctx context.Context, p struct {
			X int `json:"x"`
		}) (struct {
			Y int `json:"y"`
		}, error) {
			return struct {
				Y int `json:"y"`
			}{p.X + 1}, nil
		}))
		msgs = append(msgs, message.Message{Type: message.TypeTool, Tool: json.RawMessage(`"` + name + `"`)})
	}
	msgs = append(msgs, message.Text("compute"))
	return reg, msgs
}

func tenCalls(wired bool) string {
	var calls []string
	for i := range 10 {
		x := fmt.Sprint(i)
		if wired && i > 0 {
			x = fmt.Sprintf(`"†state.r%d.y"`, i-1)
		}
		calls = append(calls, fmt.Sprintf(`{"_tool":"t%d","x":%s,"_outputPath":"†state.r%d"}`, i, x, i))
	}
	return `{"calls":[` + strings.Join(calls, ",") + `],"output":null}`
}

// BenchmarkAgentRun is a whole run with a zero-latency model: ten calls to
// code tools, each result written to state, then the output.
func BenchmarkAgentRun(b *testing.B) {
	b.Run("calls=10", func(b *testing.B) {
		reg, msgs := tenTools()
		r := &replay{answers: []string{tenCalls(false), `{"calls":[],"output":{"done":true}}`}}
		cfg := agent.Config{Provider: r.provider(), Registry: reg}
		schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)
		b.ReportAllocs()
		for b.Loop() {
			res, err := agent.Run(context.Background(), cfg, schema, msgs)
			if err != nil || res.Steps != 2 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoopStep is one step: ten code calls wired by references, each
// reading the result of the one before.
func BenchmarkLoopStep(b *testing.B) {
	b.Run("calls=10", func(b *testing.B) {
		reg, msgs := tenTools()
		r := &replay{answers: []string{strings.Replace(tenCalls(true), `"output":null`, `"output":{"done":true}`, 1)}}
		cfg := agent.Config{Provider: r.provider(), Registry: reg}
		schema := json.RawMessage(`{"type":"object"}`)
		b.ReportAllocs()
		for b.Loop() {
			res, err := agent.Run(context.Background(), cfg, schema, msgs)
			if err != nil || res.Steps != 1 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRequest is one Request whose solution has ten calls: render,
// compose, validate; nothing runs.
func BenchmarkRequest(b *testing.B) {
	reg, msgs := tenTools()
	r := &replay{answers: []string{tenCalls(false)}}
	cfg := agent.Config{Provider: r.provider(), Registry: reg}
	for _, cb := range []string{"none", "calls"} {
		b.Run("calls=10/callback="+cb, func(b *testing.B) {
			cfg.CallbackPath = ""
			if cb != "none" {
				cfg.CallbackPath = cb
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := agent.Request(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
