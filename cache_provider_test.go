package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/anthropic"
	"github.com/augceo/agent/provider/gemini"
	"github.com/augceo/agent/provider/openai"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
)

// longSteps returns the answers of a run of steps steps, each of
// AnthropicCacheLookback + 10 calls that each write a state key, then the
// output: each step writes more blocks than Anthropic's cache looks back
// over.
func longSteps(steps int) []string {
	var answers []string
	for step := range steps {
		var cs []string
		for i := range strict.AnthropicCacheLookback + 10 {
			cs = append(cs, fmt.Sprintf(`{"_tool":"note","v":%d,"_outputPath":"†state.s%d_%d"}`, i, step, i))
		}
		answers = append(answers, `{"calls":[`+strings.Join(cs, ",")+`],"output":null}`)
	}
	return append(answers, `{"calls":[],"output":{"done":true}}`)
}

// anthropicCached starts the fake of Anthropic's API that models its
// prompt cache, answering with answers in turn, and the adapter that talks
// to it; next counts the requests answered.
func anthropicCached(t *testing.T, answers []string) (p provider.Provider, srv *strict.Server, next *atomic.Int64) {
	next = new(atomic.Int64)
	srv = strict.NewAnthropic(t, func(*strict.Request, int) (string, error) { return answers[next.Add(1)-1], nil })
	p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-test", BaseURL: srv.URL, Model: "claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	return p, srv, next
}

// TestAnthropicCacheLongSteps runs an agent whose steps each make more
// calls than Anthropic's cache looks back over (each call's write is a
// block of the next request), against a fake that models the cache: every
// request must read from the cache all that the request before it wrote.
func TestAnthropicCacheLongSteps(t *testing.T) {
	answers := longSteps(3)
	p, srv, _ := anthropicCached(t, answers)
	reg, _ := cacheAgent(1)
	cfg := agent.Config{Provider: p, Registry: reg, MaxSteps: len(answers), Clock: fixed}
	res, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`), cacheContext())
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if res.Steps != len(answers) || len(reqs) != len(answers) {
		t.Fatalf("%d steps, %d requests; want %d", res.Steps, len(reqs), len(answers))
	}
	for i, r := range reqs {
		t.Logf("request %d: %+v", i+1, r.Cache)
		if i == 0 {
			continue
		}
		if prev := reqs[i-1].Cache; r.Cache.Read < prev.Read+prev.Write {
			t.Errorf("request %d read %d tokens from the cache; the one before wrote up to %d", i+1, r.Cache.Read, prev.Read+prev.Write)
		}
	}
	if last := reqs[len(reqs)-1].Cache; last.Read == 0 {
		t.Errorf("the last request read nothing from the cache: %+v", last)
	}
}

// TestAnthropicCachePlan asks for a plan (012, lazy mode) in a
// conversation that already had a request: the plan's request reads the
// prefix the first one wrote, as its instruction comes after the
// conversation instead of joining the system messages. A latent tool with
// an _output is the exception: a plan does not execute latently, so the
// tool is offered without it, and the schema, which Anthropic's cache
// covers, is not the one the conversation's requests had.
func TestAnthropicCachePlan(t *testing.T) {
	for _, latent := range []bool{false, true} {
		answers := []string{`{"calls":[],"output":null}`, `{"calls":[{"_tool":"note","v":1,"_outputPath":"†state.a"}],"output":null}`}
		p, srv, _ := anthropicCached(t, answers)
		reg, _ := cacheAgent(1) // its summarize is latent, with an _output
		if !latent {
			reg = agent.NewRegistry()
			for _, name := range []string{"note", "lookup", "summarize"} {
				reg.Tool(name, json.RawMessage(`{"type":"object","description":"A tool.","properties":{"v":{"type":"integer"}},"required":["v"]}`))
			}
		}
		cfg := agent.Config{Provider: p, Registry: reg, Clock: fixed}
		msgs := cacheContext()
		msgs[0].Text = strings.Repeat(systemPrompt, 4) // past the shortest prefix cached
		out := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`)
		if _, err := agent.Request(context.Background(), cfg, out, msgs); err != nil {
			t.Fatal(err)
		}
		if _, calls, err := agent.Plan(context.Background(), cfg, out, msgs); err != nil || len(calls) != 1 {
			t.Fatalf("plan: %d calls, %v", len(calls), err)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		first, plan := reqs[0].Cache, reqs[1].Cache
		if hit := plan.Read >= first.Read+first.Write; first.Write == 0 || hit == latent {
			t.Errorf("latent tool %v: the plan's request read %d tokens from the cache; the request before wrote up to %d (%+v, %+v)",
				latent, plan.Read, first.Read+first.Write, first, plan)
		}
	}
}

// TestAnthropicCacheSolutions asks Anthropic for three solutions of one
// prompt, which the API answers as three requests: the first writes the
// prompt to the cache and the other two, sent once its response began
// (when the API makes the entry available), read it.
func TestAnthropicCacheSolutions(t *testing.T) {
	answers := []string{`{"calls":[],"output":{"done":true}}`, `{"calls":[],"output":{"done":false}}`, `{"calls":[],"output":{"done":true}}`}
	p, srv, _ := anthropicCached(t, answers)
	reg, _ := cacheAgent(1)
	msgs := cacheContext()
	msgs[0].Text = strings.Repeat(systemPrompt, 4) // past the shortest prefix cached
	resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: reg, N: 3}, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`), msgs)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || len(resp.Solutions) != 3 {
		t.Fatalf("%d requests, %d solutions; want 3", len(reqs), len(resp.Solutions))
	}
	first := reqs[0].Cache
	if first.Write == 0 {
		t.Fatalf("the first request wrote nothing to the cache: %+v", first)
	}
	for i, r := range reqs[1:] {
		if r.Cache.Read < first.Read+first.Write || r.Cache.Write != 0 {
			t.Errorf("request %d: %+v; want it to read the %d tokens the first wrote, and write none", i+2, r.Cache, first.Read+first.Write)
		}
	}
	if u := resp.Usage; u.CacheRead != 2*(first.Read+first.Write) || u.CacheWrite != first.Write {
		t.Errorf("usage %+v; want the three requests' cache counts summed", u)
	}
}

// TestAnthropicCacheResume: a durable run is cut in the last
// call of a 30-call step; the resumed request must read what the request
// before the interruption wrote.
func TestAnthropicCacheResume(t *testing.T) {
	const calls = strict.AnthropicCacheLookback + 10
	answers := longSteps(2)
	p, srv, next := anthropicCached(t, answers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var interrupted atomic.Bool
	reg := agent.NewRegistry()
	reg.Tool("note", json.RawMessage(`{"type":"object","description":"Writes a note: v, and its square.","properties":{"v":{"type":"integer"}},"required":["v"]}`))
	reg.Tool("lookup", json.RawMessage(`{"type":"object"}`))
	reg.Tool("summarize", json.RawMessage(`{"type":"object"}`))
	reg.Activity("note", agent.ActivityFunc(func(c context.Context, call *agent.Call) (*agent.Result, error) {
		var in struct{ V int }
		_ = json.Unmarshal(call.Params, &in)
		if next.Load() == 2 && in.V == calls-1 && interrupted.CompareAndSwap(false, true) {
			return interrupt(c, cancel) // Ctrl-C in step 2's last call
		}
		return agent.Value(map[string]int{"v": in.V, "squared": in.V * in.V})
	}))
	cfg := agent.Config{Provider: p, Registry: reg, MaxSteps: 3, Clock: fixed, Store: store.NewMemory(), RunID: "r"}
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`)
	if _, err := agent.Run(ctx, cfg, schema, cacheContext()); err == nil {
		t.Fatal("not interrupted")
	}
	if _, err := agent.Resume(context.Background(), cfg, "r"); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if prev, r := reqs[1].Cache, reqs[2].Cache; r.Read < prev.Read+prev.Write {
		t.Errorf("resumed request read %d tokens; the one before the interruption wrote up to %d", r.Read, prev.Read+prev.Write)
	}
}

// TestAnthropicCacheResumeBetweenSteps: a durable run is cut as its
// third request goes out, before the API read it (a crash, a Ctrl-C), and
// resumed. The resumed request is the one that never arrived: it must
// read what the second request wrote, although a step of 30 calls lies
// between them, more blocks than the API looks back over.
func TestAnthropicCacheResumeBetweenSteps(t *testing.T) {
	answers := longSteps(2)
	p, srv, _ := anthropicCached(t, answers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sent atomic.Int64
	cut := provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		if sent.Add(1) == 3 {
			cancel()
			return func(yield func(*provider.Chunk, error) bool) { yield(nil, c.Err()) }
		}
		return p.Generate(c, req)
	})
	reg, _ := cacheAgent(1)
	cfg := agent.Config{Provider: cut, Registry: reg, MaxSteps: 3, Clock: fixed, Store: store.NewMemory(), RunID: "r"}
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`)
	msgs := cacheContext()
	msgs[0].Text = strings.Repeat(systemPrompt, 4) // past the shortest prefix cached
	if _, err := agent.Run(ctx, cfg, schema, msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	cfg.Provider = p
	if _, err := agent.Resume(context.Background(), cfg, "r"); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests reached the API, want 3", len(reqs))
	}
	for i, r := range reqs {
		t.Logf("request %d: %+v", i+1, r.Cache)
	}
	if prev, r := reqs[1].Cache, reqs[2].Cache; prev.Write == 0 || r.Read < prev.Read+prev.Write {
		t.Errorf("resumed request read %d tokens; the request before wrote up to %d (%+v, %+v)", r.Read, prev.Read+prev.Write, prev, r)
	}
}

// TestAnthropicCacheContinue: a conversation's second turn, Continue of
// the durable run of the first, sends what a new run over the
// conversation sends, body for body, and its first request reads from
// the cache all that the first turn's last request wrote.
func TestAnthropicCacheContinue(t *testing.T) {
	answers := append(longSteps(1), `{"calls":[],"output":{"done":true}}`)
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`)
	msgs := cacheContext()
	msgs[0].Text = strings.Repeat(systemPrompt, 4) // past the shortest prefix cached
	again := message.Text("Once more, please.")
	var turns [2][]*strict.Request
	for i, continued := range []bool{false, true} {
		p, srv, _ := anthropicCached(t, answers)
		reg, _ := cacheAgent(1)
		cfg := agent.Config{Provider: p, Registry: reg, MaxSteps: 3, Clock: fixed, Store: store.NewMemory(), RunID: "r", Concurrency: 1}
		res, err := agent.Run(context.Background(), cfg, schema, msgs)
		if err != nil {
			t.Fatal(err)
		}
		if continued {
			_, err = agent.Continue(context.Background(), agent.Config{Provider: p, Registry: reg, Clock: fixed, Store: cfg.Store}, "r", again)
		} else {
			next := append(res.Log.Messages(), message.Assistant(string(res.Solution.Output)), again)
			cfg.RunID = "r2"
			_, err = agent.Run(context.Background(), cfg, schema, next)
		}
		if err != nil {
			t.Fatal(err)
		}
		turns[i] = srv.Requests()
	}
	fresh, reqs := turns[0], turns[1]
	if len(reqs) != 3 || len(fresh) != 3 {
		t.Fatalf("%d and %d requests reached the API, want 3", len(fresh), len(reqs))
	}
	for i := range reqs {
		t.Logf("request %d: %+v", i+1, reqs[i].Cache)
		if string(reqs[i].Body) != string(fresh[i].Body) {
			t.Errorf("request %d: %s", i+1, firstDiff(string(fresh[i].Body), string(reqs[i].Body)))
		}
		if reqs[i].Cache != fresh[i].Cache {
			t.Errorf("request %d: cache %+v, a new run's %+v", i+1, reqs[i].Cache, fresh[i].Cache)
		}
	}
	if prev, r := reqs[1].Cache, reqs[2].Cache; prev.Write == 0 || r.Read < prev.Read+prev.Write {
		t.Errorf("the second turn's first request read %d tokens; the first turn's last wrote up to %d (%+v, %+v)", r.Read, prev.Read+prev.Write, prev, r)
	}
}

// TestGeminiSchemaSize: the composed schema of ten tools, as Gemini gets
// it in each field. responseJsonSchema, the default, keeps the
// definitions every call shares once; responseSchema has no refs, and
// repeats them in every tool. responseJsonSchema carries no
// propertyOrdering: the models that take it (Gemini 2.5 and later) write
// properties in the schema's own order, so the list only repeated every
// object's property names. -v logs the sizes.
func TestGeminiSchemaSize(t *testing.T) {
	sizes := map[string]int{}
	for _, field := range []string{"responseJsonSchema", "responseSchema"} {
		srv := strict.NewGemini(t, func(*strict.Request, int) (string, error) { return `{"calls":[],"output":{"done":true}}`, nil })
		p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-test", ResponseSchema: field == "responseSchema"})
		if err != nil {
			t.Fatal(err)
		}
		reg, msgs := tenTools()
		if _, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`), msgs); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 || reqs[0].Field != field {
			t.Fatalf("%d requests, the schema in %q: want one, in %s", len(reqs), reqs[0].Field, field)
		}
		sizes[field] = len(reqs[0].Schema)
		t.Logf("%s: %d bytes", field, sizes[field])
		if field == "responseJsonSchema" && strings.Contains(string(reqs[0].Schema), `"propertyOrdering"`) {
			t.Errorf("responseJsonSchema has propertyOrdering: %s", reqs[0].Schema)
		}
	}
	if sizes["responseJsonSchema"]*3 > sizes["responseSchema"]*2 {
		t.Errorf("responseJsonSchema %d bytes, responseSchema %d: want the first a third smaller at least", sizes["responseJsonSchema"], sizes["responseSchema"])
	}
}

// TestOpenAISchemaSize: the composed schema of ten tools, as OpenAI's
// strict mode gets it. Each tool's meta-properties are optional, which
// strict mode spells as required but nullable; their definitions are
// shared, so they take null once, in $defs, rather than each tool wrapping
// each $ref in an anyOf with null. -v logs the size.
func TestOpenAISchemaSize(t *testing.T) {
	srv := strict.NewOpenAI(t, func(*strict.Request, int) (string, error) { return `{"calls":[],"output":{"done":true}}`, nil })
	p, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	reg, msgs := tenTools()
	if _, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg}, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`), msgs); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !reqs[0].Strict {
		t.Fatalf("%d requests; want one, strict", len(reqs))
	}
	s := string(reqs[0].Schema)
	t.Logf("response_format: %d bytes", len(s))
	for _, def := range []string{"_reasoningForCall", "_outputPath", "_outputMethod"} {
		if wrapped := `{"anyOf":[{"$ref":"#/$defs/` + def + `"},{"type":"null"}]}`; strings.Contains(s, wrapped) {
			t.Errorf("%s is made nullable at each use: %s", def, s)
		}
		if n := strings.Count(s, `{"$ref":"#/$defs/`+def+`"}`); n != 10 {
			t.Errorf("%d refs to %s, want one a tool", n, def)
		}
	}
}

// TestAnthropicCacheLateSystem: a system message that a conversation's next
// turn adds is sent where it stands, so the turn reads the turn before from
// the cache; moved into system, it would change the start of the prefix.
func TestAnthropicCacheLateSystem(t *testing.T) {
	answers := append(longSteps(1), `{"calls":[],"output":{"done":true}}`)
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`)
	msgs := cacheContext()
	msgs[0].Text = strings.Repeat(systemPrompt, 4) // past the shortest prefix cached
	p, srv, _ := anthropicCached(t, answers)
	reg, _ := cacheAgent(1)
	cfg := agent.Config{Provider: p, Registry: reg, MaxSteps: 3, Clock: fixed, Store: store.NewMemory(), RunID: "r", Concurrency: 1}
	if _, err := agent.Run(context.Background(), cfg, schema, msgs); err != nil {
		t.Fatal(err)
	}
	late := message.System("From now on, answer in French.")
	if _, err := agent.Continue(context.Background(), cfg, "r", late, message.Text("Once more, please.")); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests reached the API, want 3", len(reqs))
	}
	prev, r := reqs[1].Cache, reqs[2].Cache
	if prev.Write == 0 || r.Read < prev.Read+prev.Write {
		t.Errorf("the second turn's first request read %d tokens; the first turn's last wrote up to %d (%+v, %+v)", r.Read, prev.Read+prev.Write, prev, r)
	}
	if !strings.Contains(string(reqs[2].Body), `"messages":[`) || !strings.Contains(string(reqs[2].Body), `\u003csystem\u003e\nFrom now on, answer in French.\n\u003c/system\u003e`) {
		t.Error("the late system message is not sent in place, as a tagged user block")
	}
}

// TestAnthropicCacheRetention: a conversation whose user answers the
// first turn 20 minutes later. With the default retention the cache
// entries are gone by then, and the second turn writes the whole
// conversation again; with provider.CacheLong, saved with the run, the
// second turn reads all that the first turn's last request wrote. -v logs
// each request's tokens and the input cost at Claude Sonnet's prices.
func TestAnthropicCacheRetention(t *testing.T) {
	answers := append(longSteps(1), `{"calls":[],"output":{"done":true}}`)
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`)
	msgs := cacheContext()
	msgs[0].Text = strings.Repeat(systemPrompt, 4) // past the shortest prefix cached
	cost := map[provider.CacheRetention]float64{}
	for _, retention := range []provider.CacheRetention{provider.CacheDefault, provider.CacheLong} {
		p, srv, _ := anthropicCached(t, answers)
		reg, _ := cacheAgent(1)
		st := store.NewMemory()
		cfg := agent.Config{Provider: p, Registry: reg, MaxSteps: 3, Clock: fixed, Store: st, RunID: "r", Concurrency: 1, CacheRetention: retention}
		first, err := agent.Run(context.Background(), cfg, schema, msgs)
		if err != nil {
			t.Fatal(err)
		}
		srv.Advance(20 * time.Minute)
		// The retention is the run's: Continue's Config leaves it out.
		second, err := agent.Continue(context.Background(), agent.Config{Provider: p, Registry: reg, Clock: fixed, Store: st}, "r", message.Text("Once more, please."))
		if err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%s: %d requests reached the API, want 3", retention, len(reqs))
		}
		var u strict.Cache
		for i, r := range reqs {
			t.Logf("%q, request %d: %+v", retention, i+1, r.Cache)
			u.Input, u.Read, u.Write, u.WriteHour = u.Input+r.Cache.Input, u.Read+r.Cache.Read, u.Write+r.Cache.Write, u.WriteHour+r.Cache.WriteHour
			if long := strings.Contains(string(r.Body), `"ttl":"1h"`); long != (retention == provider.CacheLong) {
				t.Errorf("%q, request %d: 1h breakpoints %v", retention, i+1, long)
			}
		}
		// $3 per million input tokens; writes 1.25× (5 minutes) or 2× (an
		// hour), reads 0.1×.
		cost[retention] = 3e-6 * (float64(u.Input) + 1.25*float64(u.Write-u.WriteHour) + 2*float64(u.WriteHour) + 0.1*float64(u.Read))
		t.Logf("%q: input cost $%.5f", retention, cost[retention])
		prev, r := reqs[1].Cache, reqs[2].Cache
		switch retention {
		case provider.CacheLong:
			if r.Read < prev.Read+prev.Write {
				t.Errorf("20 minutes on, the second turn read %d tokens; the first turn's last request wrote up to %d", r.Read, prev.Read+prev.Write)
			}
			total := first.Usage
			total.Add(second.Usage)
			if total.CacheWriteLong == 0 || total.CacheWriteLong != total.CacheWrite {
				t.Errorf("usage %+v: want every cache write counted as long", total)
			}
		default:
			if r.Read != 0 {
				t.Errorf("20 minutes on, the second turn read %d tokens from 5-minute entries", r.Read)
			}
			if first.Usage.CacheWriteLong != 0 {
				t.Errorf("usage %+v: no long cache writes were asked for", first.Usage)
			}
		}
	}
	if cost[provider.CacheLong] >= cost[provider.CacheDefault] {
		t.Errorf("input cost with a long retention $%.5f, with the default $%.5f", cost[provider.CacheLong], cost[provider.CacheDefault])
	}
}

// TestCacheRetentionUnknown: a retention that is not one of provider's
// fails a Request and a run before the provider is asked.
func TestCacheRetentionUnknown(t *testing.T) {
	p := scripted.Solutions(`{"calls":[],"output":{"done":true}}`)
	cfg := agent.Config{Provider: p, CacheRetention: "1h"}
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)
	_, err := agent.Request(context.Background(), cfg, schema, cacheContext())
	if !errors.Is(err, provider.ErrCacheRetention) || !strings.Contains(err.Error(), `unknown cache retention "1h"`) {
		t.Errorf("request: %v", err)
	}
	if _, err := agent.Run(context.Background(), cfg, schema, cacheContext()); !errors.Is(err, provider.ErrCacheRetention) {
		t.Errorf("run: %v", err)
	}
	// A plan fails before any of its calls runs, and a durable one is
	// not created.
	ran := false
	cfg.Registry = agent.NewRegistry()
	cfg.Registry.Activity("note", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) {
		ran = true
		return nil, nil
	}))
	st := store.NewMemory()
	cfg.Store, cfg.RunID = st, "p"
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"note"}`), json.RawMessage(`{"_tool":"classify","_outputPath":"†state.label"}`)}
	msgs := []message.Message{
		{Type: message.TypeTool, Tool: json.RawMessage(`{"note":{"type":"object"},"classify":{"type":"object","properties":{"_output":{"type":"string"}}}}`)},
		message.Text("Classify."),
	}
	if _, err := agent.ExecutePlan(context.Background(), cfg, plan, msgs); !errors.Is(err, provider.ErrCacheRetention) {
		t.Errorf("plan: %v", err)
	}
	if ran {
		t.Error("a call of the plan ran")
	}
	if _, err := st.Load(context.Background(), "p"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("load: %v, want no run", err)
	}
	if n := len(p.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}
