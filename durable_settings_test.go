package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
)

// A resume keeps the limits the run was started with, and what keeps its
// requests cached, where its Config leaves them unset: a long run is not
// ended at DefaultMaxSteps, a budget is not dropped, and the requests
// carry the same cache key.
func TestResumeKeepsRunLimits(t *testing.T) {
	reg, msgs := tenTools()
	const steps = agent.DefaultMaxSteps + 5
	answers := make([]string, steps)
	for i := range steps - 1 {
		answers[i] = fmt.Sprintf(`{"calls":[{"_tool":"t%d","x":%d,"_outputPath":"†state.k%d"}],"output":null}`, i%10, i, i)
	}
	answers[steps-1] = `{"calls":[],"output":{"done":true}}`
	out := json.RawMessage(`{"type":"object"}`)
	st := store.NewMemory()

	t.Run("steps and cache key and retention", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := agent.Config{Provider: cutAt(steps-2, cancel, answers...), Registry: reg, Store: st, RunID: "long",
			MaxSteps: steps, CacheKey: "orders", CacheRetention: provider.CacheLong, CompactAt: -1, MaxRepairs: -1}
		if _, err := agent.Run(ctx, cfg, out, msgs); !errors.Is(err, context.Canceled) {
			t.Fatalf("cut run: %v", err)
		}
		run, err := st.Load(context.Background(), "long")
		if err != nil {
			t.Fatal(err)
		}
		saved, err := agent.SavedSettings(run)
		if err != nil || saved.MaxSteps != steps || saved.CacheKey != "orders" || saved.CacheRetention != provider.CacheLong || saved.CompactAt != -1 || saved.MaxRepairs != -1 {
			t.Fatalf("saved settings %+v, %v", saved, err)
		}
		var keys []string
		rest := answers[steps-3:]
		p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
			keys = append(keys, req.CacheKey+" "+string(req.CacheRetention))
			a := rest[0]
			rest = rest[1:]
			return func(yield func(*provider.Chunk, error) bool) { yield(&provider.Chunk{Text: a, Done: true}, nil) }
		})
		res, err := agent.Resume(context.Background(), agent.Config{Provider: p, Registry: reg, Store: st}, "long")
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if res.Steps != steps || len(keys) != 3 {
			t.Errorf("resumed run: %d steps, %d requests; want %d and 3", res.Steps, len(keys), steps)
		}
		for _, k := range keys {
			if k != "orders long" {
				t.Errorf("a resumed request's cache key and retention are %q, want the run's", k)
			}
		}
	})

	t.Run("token budget", func(t *testing.T) {
		// Each request uses 150 tokens: the budget stops the run before
		// its fourth, resumed or not.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := agent.Config{Provider: cutAt(3, cancel, answers...), Registry: reg, Store: st, RunID: "budget", TokenBudget: 450}
		if _, err := agent.Run(ctx, cfg, out, msgs); !errors.Is(err, context.Canceled) {
			t.Fatalf("cut run: %v", err)
		}
		asked := 0
		p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
			asked++
			a := answers[1+asked]
			return func(yield func(*provider.Chunk, error) bool) {
				yield(&provider.Chunk{Text: a, Done: true, Usage: &provider.Usage{Input: 100, Output: 50}}, nil)
			}
		})
		_, err := agent.Resume(context.Background(), agent.Config{Provider: p, Registry: reg, Store: st}, "budget")
		if !errors.Is(err, agent.ErrTokenBudget) || asked != 1 {
			t.Errorf("resume asked the model %d times and ended with %v; want once, then the budget", asked, err)
		}
	})

	t.Run("the resume's own", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg := agent.Config{Provider: cutAt(3, cancel, answers...), Registry: reg, Store: st, RunID: "own", TokenBudget: 450}
		if _, err := agent.Run(ctx, cfg, out, msgs); !errors.Is(err, context.Canceled) {
			t.Fatalf("cut run: %v", err)
		}
		res, err := agent.Resume(context.Background(), agent.Config{Provider: (&replay{answers: answers[2:]}).provider(), Registry: reg, Store: st,
			TokenBudget: 1 << 20, MaxSteps: steps}, "own")
		if err != nil || res.Steps != steps {
			t.Errorf("a resume with its own budget and steps: %v (%d steps)", err, res.Steps)
		}
	})
}

// TestResumeCacheShort: a run made with a long cache retention is
// resumed with the provider's default when the Config says CacheShort;
// with nothing said, it keeps its own.
func TestResumeCacheShort(t *testing.T) {
	reg, msgs := tenTools()
	answers := []string{`{"calls":[{"_tool":"t0","x":1,"_outputPath":"†state.a"}],"output":null}`, `{"calls":[],"output":{"done":true}}`}
	out := json.RawMessage(`{"type":"object"}`)
	for _, tt := range []struct {
		given, want provider.CacheRetention
	}{{provider.CacheDefault, provider.CacheLong}, {provider.CacheShort, provider.CacheShort}} {
		st := store.NewMemory()
		ctx, cancel := context.WithCancel(context.Background())
		cfg := agent.Config{Provider: cutAt(1, cancel, answers...), Registry: reg, Store: st, RunID: "r", CacheRetention: provider.CacheLong}
		if _, err := agent.Run(ctx, cfg, out, msgs); !errors.Is(err, context.Canceled) {
			t.Fatalf("cut run: %v", err)
		}
		cancel()
		var got []provider.CacheRetention
		p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
			got = append(got, req.CacheRetention)
			return func(yield func(*provider.Chunk, error) bool) {
				yield(&provider.Chunk{Text: answers[len(answers)-1], Done: true}, nil)
			}
		})
		if _, err := agent.Resume(context.Background(), agent.Config{Provider: p, Registry: reg, Store: st, CacheRetention: tt.given}, "r"); err != nil {
			t.Fatalf("resume: %v", err)
		}
		if len(got) == 0 || got[0] != tt.want {
			t.Errorf("resumed with %q: the requests asked %q, want %q", tt.given, got, tt.want)
		}
	}
}
