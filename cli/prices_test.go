package cli

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/openaitest"
	"github.com/augceo/agent/provider"
)

const priceList = `{
	"gpt-5-mini": {"input": 0.25, "cachedInput": 0.025, "output": 2},
	"openai:gpt-5-mini": {"input": 0.5, "output": 4},
	"gpt-5*": {"input": 1.25, "output": 10, "thinking": 5},
	"gpt-5-nano*": {"input": 0.05, "output": 0.4},
	"claude-*": {"input": 3, "cachedInput": 0.3, "cacheWrite": 3.75, "output": 15},
	"claude-opus*": {"input": 5, "cachedInput": 0.5, "cacheWrite": 6.25, "cacheWriteLong": 10, "output": 25},
	"ollama:*": {"input": 0, "output": 0}
}`

func TestPrices(t *testing.T) {
	l, err := parsePrices([]byte(priceList))
	if err != nil {
		t.Fatal(err)
	}
	u := provider.Usage{Input: 1_000_000, CacheRead: 2_000_000, CacheWrite: 3_000_000, Output: 4_000_000, Thinking: 5_000_000}
	for _, tt := range []struct {
		model string
		cost  float64
		ok    bool
	}{
		// An exact provider:model comes first, then the bare model.
		{"openai:gpt-5-mini", 0.5 + 2*0.5 + 3*0.5 + 4*4 + 5*4, true},
		{"azure:gpt-5-mini", 0.25 + 2*0.025 + 3*0.25 + 4*2 + 5*2, true},
		{"gpt-5-mini", 0.25 + 2*0.025 + 3*0.25 + 4*2 + 5*2, true},
		// The longest pattern wins; cached input and cache writes cost
		// the input price, thinking the output price, unless given.
		{"openai:gpt-5", 1.25 + 2*1.25 + 3*1.25 + 4*10 + 5*5, true},
		{"gpt-5-nano-2025", 0.05 + 2*0.05 + 3*0.05 + 4*0.4 + 5*0.4, true},
		{"anthropic:claude-sonnet-4-5", 3 + 2*0.3 + 3*3.75 + 4*15 + 5*15, true},
		// A pattern matches provider:model too.
		{"ollama:llama3.2", 0, true},
		{"gemini:gemini-2.5-flash", 0, false},
		{"", 0, false},
	} {
		c, ok := l.cost(tt.model, u)
		if ok != tt.ok || math.Abs(c-tt.cost) > 1e-9 {
			t.Errorf("cost(%q) = %v, %v; want %v, %v", tt.model, c, ok, tt.cost, tt.ok)
		}
	}
	// Writes for a long retention cost cacheWriteLong, else cacheWrite.
	long := provider.Usage{Input: 1_000_000, CacheWrite: 3_000_000, CacheWriteLong: 2_000_000}
	for model, want := range map[string]float64{
		"claude-opus-4-5":   5 + 1*6.25 + 2*10,
		"claude-sonnet-4-5": 3 + 3*3.75,
		"gpt-5-nano":        0.05 + 3*0.05,
	} {
		if c, _ := l.cost(model, long); math.Abs(c-want) > 1e-9 {
			t.Errorf("cost(%q) of long cache writes = %v, want %v", model, c, want)
		}
	}
	// Nothing used costs nothing, priced or not; no list prices nothing.
	if c, ok := l.cost("gemini:x", provider.Usage{}); !ok || c != 0 {
		t.Errorf("no usage: %v, %v", c, ok)
	}
	var none *prices
	if _, ok := none.cost("gpt-5-mini", u); ok || none.costText("gpt-5-mini", u) != "" {
		t.Error("no list gave a cost")
	}
}

func TestParsePricesErrors(t *testing.T) {
	for _, tt := range []struct{ in, err string }{
		{`[]`, "a price list is a JSON object"},
		{`null`, "a price list is a JSON object"},
		{"{\n  \"m\": {\"input\": 1,}\n}", `line 2, column 20: invalid character '}'`},
		{`{"m": {"input": 1}}`, `model "m": "input" and "output" are required`},
		{`{"m": {"input": 1, "output": 2, "cached_input": 1}}`, `model "m": json: unknown field "cached_input"`},
		{`{"m": {"input": 1, "output": -2}}`, `model "m": "output" is negative`},
		{`{"m": {"input": 1, "output": 2, "cacheWriteLong": -1}}`, `model "m": "cacheWriteLong" is negative`},
		{`{"m": {"input": "1", "output": 2}}`, `model "m": json: cannot unmarshal string`},
		{`{"gpt-*-mini": {"input": 1, "output": 2}}`, `model "gpt-*-mini": "*" may only end a name`},
	} {
		_, err := parsePrices([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: error %v, want %q", tt.in, err, tt.err)
		}
	}
}

// TestCostCommands prints costs with a price list, from --prices or
// ACTS_PRICES, and none without one.
func TestCostCommands(t *testing.T) {
	ctx := context.Background()
	prices := writeFile(t, "prices.json", `{"m*": {"input": 1000, "cachedInput": 100, "output": 2000}}`)
	other := writeFile(t, "other.json", `{"gpt-5": {"input": 1, "output": 2}}`)
	// Every answer reports 10 input tokens, 2 read from the cache, 7
	// output: 10×1000 + 2×100 + 7×2000 = 24,200 dollars per million.
	const oneCall = 0.0242
	srv := openaitest.Server(t, func(body []byte) string {
		return `{"calls":[],"output":{"capital":"Paris"}}`
	})
	idea := writeIdea(t)
	request := []string{"request", idea, "--model", "local:m1", "--base-url", srv.URL}

	t.Setenv("ACTS_PRICES", "")
	_, out, _ := acts(ctx, nil, request...)
	if strings.Contains(out, "cost") {
		t.Errorf("request with no price list:\n%s", out)
	}
	_, out, _ = acts(ctx, nil, append(request, "--json")...)
	if strings.Contains(out, "cost") {
		t.Errorf("request --json with no price list:\n%s", out)
	}
	_, out, _ = acts(ctx, nil, append(request, "--prices", prices)...)
	if !strings.HasSuffix(out, "usage: input 10, output 7, thinking 0, cache read 2, cache write 0; cost $0.0242\n") {
		t.Errorf("request --prices:\n%s", out)
	}
	_, out, _ = acts(ctx, nil, append(request, "--prices", other)...)
	if !strings.Contains(out, `; cost unknown: `+other+` has no price for "local:m1"`) {
		t.Errorf("request with no price for the model:\n%s", out)
	}
	_, out, _ = acts(ctx, nil, append(request, "--prices", prices, "--json")...)
	var resp struct{ Cost *float64 }
	if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.Cost == nil || math.Abs(*resp.Cost-oneCall) > 1e-12 {
		t.Errorf("request --json --prices: %s", out)
	}

	// A loop run: log prices the usage journaled for it.
	db := filepath.Join(t.TempDir(), "runs.db")
	if code, _, errOut := acts(ctx, agent.NewRegistry(), "run", idea, "--model", "local:m1", "--base-url", srv.URL, "--store", db, "--id", "l"); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	_, out, _ = acts(ctx, nil, "log", "l", "--store", db)
	if strings.Contains(out, "cost") {
		t.Errorf("log with no price list:\n%s", out)
	}
	_, out, _ = acts(ctx, nil, "log", "l", "--store", db, "--json")
	if strings.Contains(strings.SplitN(out, "\n", 2)[0], "cost") {
		t.Errorf("log --json with no price list:\n%s", out)
	}
	t.Setenv("ACTS_PRICES", prices)
	_, out, _ = acts(ctx, nil, "log", "l", "--store", db)
	if !strings.Contains(out, "usage: 10 input tokens, 2 read from the cache and 0 written to it (hit rate 17%), 7 output tokens (0 thinking); cost $0.0242\n") {
		t.Errorf("log with ACTS_PRICES:\n%s", out)
	}
	_, out, _ = acts(ctx, nil, "log", "l", "--store", db, "--json")
	var head struct{ Cost *float64 }
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &head); err != nil || head.Cost == nil || math.Abs(*head.Cost-oneCall) > 1e-12 {
		t.Errorf("log --json with ACTS_PRICES: %s", out)
	}
	// The flag overrides the variable.
	_, out, _ = acts(ctx, nil, "log", "l", "--store", db, "--prices", other)
	if !strings.Contains(out, `cost unknown: `+other+` has no price for "local:m1"`) {
		t.Errorf("log --prices:\n%s", out)
	}
	code, _, errOut := acts(ctx, nil, "log", "l", "--store", db, "--prices", "nope.json")
	if code != 1 || !strings.Contains(errOut, "acts: --prices: open nope.json: no such file or directory") {
		t.Errorf("a missing price list: %d %q", code, errOut)
	}
	bad := writeFile(t, "bad.json", `{"m": {"input": 1}}`)
	code, _, errOut = acts(ctx, nil, "request", idea, "--model", "local:m1", "--base-url", srv.URL, "--prices", bad)
	if code != 1 || !strings.Contains(errOut, "acts: --prices "+bad+`: model "m": "input" and "output" are required`) {
		t.Errorf("a bad price list: %d %q", code, errOut)
	}
}
