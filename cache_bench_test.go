package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/store"
	"github.com/google/go-cmp/cmp"
)

// cacheRun is a run of steps steps, each with two calls that write state
// (a set of a new key, a push onto a list), then the output: the
// scenario of BenchmarkCachePrefix.
func cacheRun(tb testing.TB, steps int, rendering agent.Rendering) []provider.Request {
	reg, answers := cacheAgent(steps)
	p := scripted.Solutions(answers...)
	cfg := agent.Config{Provider: p, Registry: reg, Rendering: rendering, MaxSteps: steps, Clock: fixed}
	res, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`), cacheContext())
	if err != nil || res.Steps != steps {
		tb.Fatalf("run: %v", err)
	}
	return p.Requests()
}

// cacheAgent is the registry and the model's answers of cacheRun.
func cacheAgent(steps int) (*agent.Registry, []string) {
	reg := agent.NewRegistry()
	reg.Tool("note", json.RawMessage(`{"type":"object","description":"Writes a note: v, and its square, where _outputPath says.","properties":{"v":{"type":"integer","description":"What to write"}},"required":["v"]}`))
	reg.Tool("lookup", json.RawMessage(`{"type":"object","description":"Looks a customer up by id in the CRM and returns their name, plan, region and open tickets.","properties":{"id":{"type":"string","description":"The customer id, e.g. C-1042"},"fields":{"type":"array","items":{"enum":["name","plan","region","tickets"]},"description":"Which fields to return; all when absent"}},"required":["id"]}`))
	reg.Tool("summarize", json.RawMessage(`{"type":"object","description":"Summarizes a list of notes in a few sentences for the weekly report.","properties":{"notes":{"type":"array","items":{"type":"object"},"description":"The notes to summarize"},"tone":{"enum":["neutral","upbeat","terse"]},"_output":{"type":"object","properties":{"summary":{"type":"string"}}}},"required":["notes"]}`))
	reg.Activity("note", agent.Bind(func(ctx context.Context, p struct {
		V int `json:"v"`
	}) (map[string]int, error) {
		return map[string]int{"v": p.V, "squared": p.V * p.V}, nil
	}))
	var answers []string
	for i := range steps - 1 {
		answers = append(answers, fmt.Sprintf(`{"calls":[{"_tool":"note","v":%d,"_outputPath":"†state.s%d"},`+
			`{"_tool":"note","v":%d,"_outputPath":"†state.items","_outputMethod":"push"}],"output":null}`, i, i, i))
	}
	answers = append(answers, `{"calls":[],"output":{"done":true}}`)
	return reg, answers
}

// cacheContext is the context of cacheRun.
func cacheContext() []message.Message {
	return []message.Message{
		{Type: message.TypeText, Role: message.RoleSystem, Text: systemPrompt},
		{Type: message.TypeTool, Tool: json.RawMessage(`"note"`)},
		{Type: message.TypeTool, Tool: json.RawMessage(`"lookup"`)},
		{Type: message.TypeTool, Tool: json.RawMessage(`"summarize"`)},
		{Type: message.TypeData, Kind: "state", Data: json.RawMessage(`{"items":[]}`), Description: "The notes so far."},
		message.Text("Write a note per step until told to stop."),
	}
}

// systemPrompt is the instructions of BenchmarkCachePrefix's agent, of
// the length real ones have (a few hundred tokens).
const systemPrompt = `You are the operations assistant of a small support team. You keep a running set of
notes about the work of the day in the state, and you answer with the tools you are given.

How to work:
- Work one step at a time. In each step, make the calls the step needs, and write every
  result where the next steps can read it with _outputPath (†state.<key>). Reuse values by
  reference (†state.<key>.<field>) instead of copying them into parameters.
- Keep notes short and factual. A note holds a number and its square; do not invent values.
- Append to lists with _outputMethod "push"; replace a value with the default "set".
- Look customers up only when a note names one, and never guess an id.
- When a tool fails, read the error, fix the call and try again once; then report it.
- Summaries are for the weekly report: neutral tone unless asked otherwise.
- Stop when you are told to, and give the output the schema asks for, nothing else.

What the notes are for: the team reads them at the end of the day to see what was done,
what is pending and what needs a human. Be precise about numbers and references, and do not
repeat what a note already says.`

// sentBytes is a request as a provider reads it: the schema (tools come
// first), then each message.
func sentBytes(req provider.Request) string {
	var b strings.Builder
	b.Write(req.Schema)
	for _, m := range req.Messages {
		b.WriteString("\x00" + string(m.Role) + "\x00" + m.Text)
	}
	return b.String()
}

// cacheFigures measures a run's requests: the share of each request's
// bytes that is a byte-identical prefix of the request before (averaged
// from the second request on), all bytes sent, and the input cost in
// dollars at Anthropic's published prices (Claude Sonnet: $3 per million
// input tokens, cache writes 1.25x, cache reads 0.1x; four bytes a
// token): uncached, and with the prefix read from the cache and the rest
// written to it.
func cacheFigures(reqs []provider.Request) (prefixShare float64, total int, uncached, cached float64) {
	const perToken, write, read = 3.0 / 1e6, 1.25, 0.1
	var prev string
	for i, req := range reqs {
		s := sentBytes(req)
		total += len(s)
		common := 0
		for common < len(s) && common < len(prev) && s[common] == prev[common] {
			common++
		}
		if i > 0 {
			prefixShare += float64(common) / float64(len(s))
		}
		tokens, hit := float64(len(s))/4, float64(common)/4
		uncached += tokens * perToken
		cached += (hit*read + (tokens-hit)*write) * perToken
		prev = s
	}
	return prefixShare / float64(len(reqs)-1), total, uncached, cached
}

// BenchmarkCachePrefix runs 20 steps of two state-writing calls in each
// rendering and reports how much of each request the provider's prompt
// cache can serve (prefix-%: the share of a request's bytes that are a
// byte-identical prefix of the request before), the bytes sent in all,
// and the input cost of the run in micro-dollars, without the cache and
// with it.
func BenchmarkCachePrefix(b *testing.B) {
	for _, rendering := range []agent.Rendering{agent.RenderCached, agent.RenderSnapshot} {
		b.Run(string(rendering), func(b *testing.B) {
			var reqs []provider.Request
			for b.Loop() {
				reqs = cacheRun(b, 20, rendering)
			}
			share, total, uncached, cached := cacheFigures(reqs)
			b.ReportMetric(100*share, "prefix-%")
			b.ReportMetric(float64(total), "prompt-bytes")
			b.ReportMetric(uncached*1e6, "µ$-uncached")
			b.ReportMetric(cached*1e6, "µ$-cached")
		})
	}
}

// TestCachePrefix checks the goal of BenchmarkCachePrefix: by default at
// least 95% of each request is the request before, byte for byte, and
// every request starts with the whole request before it.
func TestCachePrefix(t *testing.T) {
	reqs := cacheRun(t, 20, agent.RenderCached)
	share, _, uncached, cached := cacheFigures(reqs)
	if share < 0.95 || cached >= uncached {
		t.Errorf("prefix share %.1f%%, cost %.0f µ$ cached against %.0f µ$", 100*share, cached*1e6, uncached*1e6)
	}
	for i := 1; i < len(reqs); i++ {
		prev, cur := unmarked(reqs[i-1]), unmarked(reqs[i])
		if string(prev.Schema) != string(cur.Schema) || len(cur.Messages) < len(prev.Messages) {
			t.Fatalf("request %d does not extend request %d", i+1, i)
		}
		for k := range prev.Messages {
			if prev.Messages[k] != cur.Messages[k] {
				t.Fatalf("request %d changed message %d of the request before:\n%s\nwas\n%s", i+1, k, cur.Messages[k].Text, prev.Messages[k].Text)
			}
		}
		if cur.CacheKey == "" || cur.CacheKey != prev.CacheKey {
			t.Errorf("request %d: cache key %q after %q", i+1, cur.CacheKey, prev.CacheKey)
		}
	}
	snapShare, _, _, _ := cacheFigures(cacheRun(t, 20, agent.RenderSnapshot))
	if snapShare >= share {
		t.Errorf("a snapshot shares %.1f%% of its requests, the default %.1f%%", 100*snapShare, 100*share)
	}
}

// TestCachedRenderingKeepsValuesCurrent rebuilds every data identity
// from the text of a run's last request, as a model reading it must,
// and checks it against the log: the first block of an identity gives
// its value, each update what changed (or the whole new value).
func TestCachedRenderingKeepsValuesCurrent(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("put", json.RawMessage(`{"type":"object","properties":{"v":{}},"required":["v"]}`))
	reg.Activity("put", agent.Bind(func(ctx context.Context, p struct {
		V any `json:"v"`
	}) (any, error) {
		return p.V, nil
	}))
	p := scripted.Solutions(
		`{"calls":[{"_tool":"put","v":{"a":1,"b":{"c":2}},"_outputPath":"†state.obj"},{"_tool":"put","v":[1],"_outputPath":"†state.list"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":{"b":{"d":3}},"_outputPath":"†state.obj","_outputMethod":"merge"},{"_tool":"put","v":2,"_outputPath":"†state.list","_outputMethod":"push"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":{"a":9},"_outputPath":"†state.obj","_outputMethod":"assign"},{"_tool":"put","v":[3,4],"_outputPath":"†state.list","_outputMethod":"concat"},{"_tool":"put","v":"x","_outputPath":"†notes.first","_instance":"i1"}],"output":null}`,
		`{"calls":[{"_tool":"put","v":{"z":true},"_outputPath":"†state"},{"_tool":"put","v":"y","_outputPath":"†notes.first","_instance":"i1"}],"output":null}`,
		`{"calls":[],"output":{}}`,
	)
	msgs := ctxOf(t, `[{"type":"tool","tool":"put"},{"type":"data","kind":"state","data":{"keep":"me"}},
		{"type":"data","kind":"notes","_instance":"i1","data":{"n":0}},{"type":"text","text":"go"}]`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, Concurrency: 1}, json.RawMessage(`{"type":"object"}`), msgs)
	if err != nil {
		t.Fatal(err)
	}
	reqs := p.Requests()
	got := map[message.Identity]any{}
	for _, m := range reqs[len(reqs)-1].Messages {
		header, body, _ := strings.Cut(m.Text, "\n")
		update := strings.HasPrefix(header, "## Data update: ¶")
		if !update && !strings.HasPrefix(header, "## Data: ¶") {
			continue
		}
		id := message.Identity{Kind: strings.Fields(header[strings.Index(header, "¶")+len("¶"):])[0]}
		if _, inst, ok := strings.Cut(header, "(_instance: "); ok {
			id.Instance = strings.TrimSuffix(inst, ")")
		}
		for strings.HasPrefix(body, "Each _instance of") || strings.HasPrefix(body, "Input data MUST") {
			_, body, _ = strings.Cut(body, "\n") // what the block says of its data before it
		}
		if !update {
			var v any
			if err := json.NewDecoder(strings.NewReader(body)).Decode(&v); err != nil {
				t.Fatalf("%s: %v", m.Text, err)
			}
			got[id] = v
			continue
		}
		line, _, _ := strings.Cut(body, "\n")
		head, value, _ := strings.Cut(line, ": ")
		var v any
		if err := json.Unmarshal([]byte(value), &v); err != nil {
			t.Fatalf("%s: %v", m.Text, err)
		}
		if head == "now" {
			got[id] = v
			continue
		}
		method, target, _ := strings.Cut(head, " ")
		r, err := ref.Parse(target)
		if err != nil {
			t.Fatalf("%s: %v", m.Text, err)
		}
		at := r.Refs()[0]
		_, present := got[id]
		if got[id], err = ref.Apply(got[id], present, at.Path, ref.Method(method), v); err != nil {
			t.Fatalf("%s: %v", m.Text, err)
		}
	}
	if len(got) != 2 || len(res.Log.Identities()) != 2 {
		t.Fatalf("rebuilt %v, the log has %v", got, res.Log.Identities())
	}
	for _, id := range res.Log.Identities() {
		want, _, err := res.Log.Value(id)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got[id])
		var w any
		_ = json.Unmarshal(want, &w)
		wb, _ := json.Marshal(w)
		if string(g) != string(wb) {
			t.Errorf("%v rebuilt from the request: %s, the log holds %s", id, g, wb)
		}
	}
}

// BenchmarkLoopGrowth runs S steps of one call each, every call writing
// a new state key, and reports the framework's time and bytes per step:
// a step's cost must not grow with the length of the run.
//
// advisor/S=… is the same run with an on-demand advisor in its context:
// an advisor's text reads the same at every step, so its steps too
// render only what is new.
func BenchmarkLoopGrowth(b *testing.B) {
	advisor := message.Message{Type: message.TypeAdvisor, Advisor: &message.Advisor{ID: "risk", Role: "Weighs the risks."}}
	for _, with := range []struct {
		name  string
		extra []message.Message
	}{{"", nil}, {"advisor/", []message.Message{advisor}}} {
		for _, steps := range []int{10, 100, 500} {
			b.Run(fmt.Sprint(with.name, "S=", steps), func(b *testing.B) {
				loopGrowth(b, steps, func(int) agent.Config { return agent.Config{} }, with.extra...)
			})
		}
	}
}

// loopGrowth runs BenchmarkLoopGrowth's run of steps steps, its context
// followed by extra, with the Config of each run (its number) for the
// rest, and reports per step.
func loopGrowth(b *testing.B, steps int, base func(run int) agent.Config, extra ...message.Message) {
	growth(b, steps, func(i int) string {
		return fmt.Sprintf(`{"calls":[{"_tool":"t%d","x":%d,"_outputPath":"†state.k%d"}],"output":null}`, i%10, i, i)
	}, base, extra...)
}

// growth is loopGrowth with the answer of each step (from 0) but the
// last, which gives the output.
func growth(b *testing.B, steps int, answer func(step int) string, base func(run int) agent.Config, extra ...message.Message) {
	reg, msgs := tenTools()
	msgs = append(msgs, extra...)
	answers := make([]string, steps)
	for i := range steps - 1 {
		answers[i] = answer(i)
	}
	answers[steps-1] = `{"calls":[],"output":{"done":true}}`
	r := &replay{answers: answers}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	runs := 0
	for b.Loop() {
		runs++
		cfg := base(runs)
		cfg.Provider, cfg.Registry, cfg.MaxSteps = r.provider(), reg, steps
		res, err := agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), msgs)
		if err != nil || res.Steps != steps {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&ms1)
	perStep := float64(b.N * steps)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perStep, "ns/step")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/perStep, "B/step")
}

// compactingRun is cacheRun with a small CompactAt, its events and its
// requests.
func compactingRun(t *testing.T, cfg agent.Config, steps int) (*agent.RunResult, []agent.RunEvent) {
	t.Helper()
	var events []agent.RunEvent
	var res *agent.RunResult
	for ev, err := range agent.Events(context.Background(), cfg, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`), cacheContext()) {
		if err != nil {
			if le, ok := errors.AsType[*agent.LimitError](err); ok {
				return le.Result, events
			}
			t.Fatal(err)
		}
		events = append(events, ev)
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
	}
	return res, events
}

func TestCompaction(t *testing.T) {
	reg, answers := cacheAgent(20)
	p := scripted.Solutions(answers...)
	res, events := compactingRun(t, agent.Config{Provider: p, Registry: reg, MaxSteps: 20, Clock: fixed, CompactAt: 1600}, 20)
	// Each compaction waits for the context to grow by half the limit
	// since the last one left it.
	const limit = 1600
	compacted, lastTo := 0, -1
	for _, ev := range events {
		if ev.Kind != agent.EventCompacted {
			continue
		}
		compacted++
		var from, to int
		if _, err := fmt.Sscanf(ev.Text, "compacted the rendered context from ~%d to ~%d tokens", &from, &to); err != nil {
			t.Fatalf("%q: %v", ev.Text, err)
		}
		if lastTo >= 0 && from <= lastTo+limit/2 {
			t.Errorf("step %d compacted at ~%d tokens; the last compaction left ~%d", ev.Step, from, lastTo)
		}
		lastTo = to
	}
	reqs := p.Requests()
	first := slices.IndexFunc(reqs, func(r provider.Request) bool {
		return slices.ContainsFunc(r.Messages, func(m provider.Message) bool { return strings.HasPrefix(m.Text, "## Compacted") })
	})
	if compacted == 0 || first < 1 {
		t.Fatalf("%d compactions; first compacted request %d", compacted, first)
	}
	if len(sentBytes(reqs[first])) >= len(sentBytes(reqs[first-1])) {
		t.Errorf("the compacted request (%d bytes) is no smaller than the one before (%d)", len(sentBytes(reqs[first])), len(sentBytes(reqs[first-1])))
	}
	// The cache misses once, at the compaction; the requests after it
	// extend it until the next.
	for i := first + 1; i < len(reqs); i++ {
		prev, cur := sentBytes(unmarked(reqs[i-1])), sentBytes(unmarked(reqs[i]))
		if !strings.HasPrefix(cur, prev) && !strings.Contains(cur[len(cur)-min(len(cur), 4000):], "## Compacted") {
			t.Errorf("request %d does not extend request %d", i+1, i)
		}
	}
	// Nothing is lost from the log: every output, and the markers.
	outputs, markers := 0, 0
	for _, m := range res.Log.Messages() {
		switch {
		case m.Type == message.TypeData && m.OutputPath != "":
			outputs++
		case m.Type == message.TypeCompaction:
			markers++
		}
	}
	if outputs != 2*19 || markers != compacted {
		t.Errorf("%d outputs and %d compaction messages in the log, want %d and %d", outputs, markers, 2*19, compacted)
	}
	items, err := res.Log.Lookup("state", []string{"items"})
	if err != nil || strings.Count(string(items), `"v"`) != 19 {
		t.Errorf("state.items after compactions: %s, %v", items, err)
	}
}

// TestCompactionKeeps: a compacted context still introduces the
// advisors (a registered one by its registered role, so the model knows
// whom ConsultAdvisor speaks for) and shows what a handler of the user's
// rendered, as it was rendered.
func TestCompactionKeeps(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(reg *agent.Registry) []message.Message
		want  []string
	}{
		{"advisors", func(reg *agent.Registry) []message.Message {
			reg.Advisor(message.Advisor{ID: "auditor", Role: "Checks every note against the CRM."}, nil)
			return []message.Message{
				{Type: message.TypeAdvisor, Advisor: &message.Advisor{ID: "risk", Role: "Weighs the risks of each note."}},
				{Type: message.TypeAdvisor, Advisor: &message.Advisor{Name: "auditor"}}}
		}, []string{"## Advisor: risk\nWeighs the risks of each note.", "## Advisor: auditor\nChecks every note against the CRM."}},
		{"handler messages", func(reg *agent.Registry) []message.Message {
			reg.HandleFunc("memo", func(ctx context.Context, b *agent.Build, m *message.Message) error {
				b.Render(provider.RoleUser, "## Memo\n"+m.Text)
				return nil
			})
			return []message.Message{{Type: "memo", Text: "Notes go to the weekly report."}}
		}, []string{"## Memo\nNotes go to the weekly report."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg, answers := cacheAgent(20)
			msgs := append(cacheContext(), tt.setup(reg)...)
			p := scripted.Solutions(answers...)
			res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, MaxSteps: 20, Clock: fixed, CompactAt: 1600},
				json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`), msgs)
			if err != nil || res.Steps != 20 {
				t.Fatalf("%v, %+v", err, res)
			}
			compacted := 0
			for _, r := range p.Requests() {
				text := fmt.Sprint(r.Messages)
				if !strings.Contains(text, "## Compacted") {
					continue
				}
				compacted++
				for _, w := range tt.want {
					if !strings.Contains(text, w) {
						t.Fatalf("a compacted request lost %q:\n%s", w, text)
					}
				}
			}
			if compacted == 0 {
				t.Fatal("the run never compacted")
			}
		})
	}
}

// TestCompactionResume interrupts a run after it compacted and resumes
// it: the requests after the resume are those of the run that was not
// interrupted, compaction included.
func TestCompactionResume(t *testing.T) {
	reg, answers := cacheAgent(20)
	whole := scripted.Solutions(answers...)
	cfg := agent.Config{Provider: whole, Registry: reg, MaxSteps: 20, Clock: fixedClock, CompactAt: 1600, Store: store.NewMemory(), RunID: "whole", Concurrency: 1}
	if res, _ := compactingRun(t, cfg, 20); res == nil || res.Steps != 20 {
		t.Fatalf("the whole run: %+v", res)
	}
	st := store.NewMemory()
	cut := scripted.Solutions(answers[:12]...) // the model fails at step 13
	cfg.Provider, cfg.Store, cfg.RunID = cut, st, "cut"
	compactingRun(t, cfg, 20)
	if !slices.ContainsFunc(cut.Requests(), func(r provider.Request) bool {
		return strings.Contains(fmt.Sprint(r.Messages), "## Compacted")
	}) {
		t.Fatal("the interrupted run did not compact before it stopped")
	}
	rest := scripted.Solutions(answers[12:]...)
	cfg.Provider, cfg.RunID = rest, ""
	res, err := agent.Resume(context.Background(), cfg, "cut")
	if err != nil || res.Steps != 20 {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	want, got := whole.Requests()[12:], rest.Requests()
	if len(got) != len(want) {
		t.Fatalf("%d requests after the resume, want %d", len(got), len(want))
	}
	for i := range got {
		if g, w := sentBytes(unmarked(got[i])), sentBytes(unmarked(want[i])); g != w {
			t.Errorf("request %d after the resume differs from the whole run's:\n%s", i+13, cmp.Diff(strings.Split(g, "\x00"), strings.Split(w, "\x00")))
		}
	}
}

// TestCachePrefixAcrossResume stops a durable run while the model answers
// its fourth request, and resumes it: the resumed run asks the model the
// same requests, byte for byte, as a run that never stopped, so the
// provider's prompt cache still holds the prefix it had seen.
func TestCachePrefixAcrossResume(t *testing.T) {
	const steps = 8
	schema := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}}}`)
	reg, answers := cacheAgent(steps)
	// One call at a time: parallel calls settle in any order, and so
	// would the messages of two uninterrupted runs.
	cfg := agent.Config{Registry: reg, Rendering: agent.RenderCached, MaxSteps: steps, Clock: fixed, Concurrency: 1}
	uninterrupted := scripted.Solutions(answers...)
	cfg.Provider = uninterrupted
	if _, err := agent.Run(context.Background(), cfg, schema, cacheContext()); err != nil {
		t.Fatal(err)
	}
	want := uninterrupted.Requests()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := scripted.Solutions(answers...)
	var asked []provider.Request
	cut := provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		if len(first.Requests()) == 3 { // the fourth: Ctrl-C while the model answers
			asked = append(asked, *req)
			cancel()
			return func(yield func(*provider.Chunk, error) bool) { yield(nil, c.Err()) }
		}
		return first.Generate(c, req)
	})
	cfg.Provider, cfg.Store, cfg.RunID = cut, store.NewMemory(), "cache"
	if _, err := agent.Run(ctx, cfg, schema, cacheContext()); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	rest := scripted.Solutions(answers[3:]...)
	cfg.Provider = rest
	res, err := agent.Resume(context.Background(), cfg, "cache")
	if err != nil || res.Steps != steps {
		t.Fatalf("resumed run: %v", err)
	}
	got := append(first.Requests(), asked...)
	got = append(got, rest.Requests()...)
	if len(got) != len(want)+1 {
		t.Fatalf("%d requests, want %d and the one cut short", len(got), len(want)+1)
	}
	got = slices.Delete(got, 3, 4) // the cut request is the one asked again
	for i := range want {
		if d := cmp.Diff(sentBytes(want[i]), sentBytes(got[i])); d != "" {
			t.Errorf("request %d differs from the uninterrupted run's (-want +got):\n%s", i+1, d)
		}
	}
	if d := cmp.Diff(sentBytes(asked[0]), sentBytes(rest.Requests()[0])); d != "" {
		t.Errorf("the resumed request differs from the one cut short (-cut +resumed):\n%s", d)
	}
}
