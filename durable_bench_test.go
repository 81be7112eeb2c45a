package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/sqlite"
)

// BenchmarkDurablePlan runs the instancing benchmark's plan over 1,000
// instances with no store, the memory store and SQLite, to show what
// durability costs per call.
func BenchmarkDurablePlan(b *testing.B) {
	const n = 1000
	reg, plan, msgs := instancesFixture(n)
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
