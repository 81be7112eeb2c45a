package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
)

// BenchmarkInstances runs a 3-call plan of code activities over n
// instances with ExecutePlanInstances (013).
func BenchmarkInstances(b *testing.B) {
	for _, n := range []int{1000, 3000, 10000, 100000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			reg, plan, msgs := instancesFixture(n)
			b.ReportAllocs()
			for b.Loop() {
				res, err := agent.ExecutePlanInstances(context.Background(), agent.Config{Registry: reg}, plan, msgs)
				if err != nil {
					b.Fatal(err)
				}
				if res.Log.Len() < 4*n {
					b.Fatalf("log has %d messages", res.Log.Len())
				}
			}
		})
	}
}

// instancesFixture is the instancing benchmark's setup: code activities a,
// b and c, n instanced inputs, and the 3-call template plan that chains
// them (a reads †input.v, b reads †state.a.v, c reads †state.b.v).
func instancesFixture(n int) (*agent.Registry, []json.RawMessage, []message.Message) {
	reg := agent.NewRegistry()
	for _, name := range []string{"a", "b", "c"} {
		reg.Tool(name, json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}`))
		reg.Activity(name, agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
			return &agent.Result{Value: json.RawMessage(`{"v":1}`)}, nil
		}))
	}
	msgs := []message.Message{
		{Type: message.TypeTool, Tool: json.RawMessage(`"a"`)},
		{Type: message.TypeTool, Tool: json.RawMessage(`"b"`)},
		{Type: message.TypeTool, Tool: json.RawMessage(`"c"`)},
	}
	for i := range n {
		msgs = append(msgs, message.Message{Type: message.TypeData, Kind: "input", Instance: fmt.Sprint("i", i), Data: json.RawMessage(fmt.Sprintf(`{"v":%d}`, i))})
	}
	plan := []json.RawMessage{
		json.RawMessage(`{"_tool":"a","v":"†input.v","_outputPath":"†state.a"}`),
		json.RawMessage(`{"_tool":"b","v":"†state.a.v","_outputPath":"†state.b"}`),
		json.RawMessage(`{"_tool":"c","v":"†state.b.v","_outputPath":"†state.c"}`),
	}
	return reg, plan, msgs
}
