package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/sqlite"
)

// BenchmarkDurablePlan runs the instancing benchmark's 3-call plan over
// 1,000 instances with no store, the memory store and SQLite, to show
// what durability costs per call.
func BenchmarkDurablePlan(b *testing.B) {
	const n = 1000
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
	for _, tt := range []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"none", func(*testing.B) store.Store { return nil }},
		{"memory", func(*testing.B) store.Store { return store.NewMemory() }},
		{"sqlite", func(b *testing.B) store.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	} {
		b.Run("store="+tt.name, func(b *testing.B) {
			st := tt.open(b)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				cfg := agent.Config{Registry: reg, RunID: fmt.Sprint("r", i)}
				if st != nil {
					cfg.Store = st
				}
				res, err := agent.ExecutePlanInstances(context.Background(), cfg, plan, msgs)
				if err != nil {
					b.Fatal(err)
				}
				if res.Log.Len() != 4*n+4 {
					b.Fatalf("log has %d messages", res.Log.Len())
				}
			}
		})
	}
}
