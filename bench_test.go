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
	"github.com/augceo/agent/schema"
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

func tenCalls(wired bool) string { return nCalls(10, wired) }

// nCalls is an answer with n calls to the tools of tenTools, each
// writing its own state key; wired, each reads the one before.
func nCalls(n int, wired bool) string {
	var calls []string
	for i := range n {
		x := fmt.Sprint(i)
		if wired && i > 0 {
			x = fmt.Sprintf(`"†state.r%d.y"`, i-1)
		}
		calls = append(calls, fmt.Sprintf(`{"_tool":"t%d","x":%s,"_outputPath":"†state.r%d"}`, i%10, x, i))
	}
	return `{"calls":[` + strings.Join(calls, ",") + `],"output":null}`
}

// BenchmarkAgentRun is a whole run with a zero-latency model: ten calls to
// code tools, each result written to state, then the output.
//
// calls=1 and calls=100 price a step and a call apart: a call costs
// (calls=100 - calls=1) / 99, and the two steps of calls=1 cost about
// what that run does less one call.
func BenchmarkAgentRun(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprint("calls=", n), func(b *testing.B) {
			reg, msgs := tenTools()
			r := &replay{answers: []string{nCalls(n, false), `{"calls":[],"output":{"done":true}}`}}
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

// The parameters and result of the tools of BenchmarkAgentRunUser, as a
// user writes them: described for the model.
type lookupParams struct {
	X    int    `json:"x" jsonschema:"description=The number to look up"`
	Note string `json:"note,omitempty" jsonschema_description:"Why it is looked up, for the audit log"`
}

type lookupResult struct {
	Y int `json:"y" jsonschema:"description=The number that follows x"`
}

// userTools registers ten tools as a user would: parameter and result
// schemas from Go types, a description, and a bound function.
func userTools(tb testing.TB) (*agent.Registry, []message.Message) {
	reg := agent.NewRegistry()
	var def map[string]any
	if err := json.Unmarshal(schema.For[lookupParams](), &def); err != nil {
		tb.Fatal(err)
	}
	var result any
	if err := json.Unmarshal(schema.For[lookupResult](), &result); err != nil {
		tb.Fatal(err)
	}
	def["properties"].(map[string]any)["_output"] = result
	msgs := []message.Message{{Type: message.TypeText, Role: message.RoleSystem, Text: "You look numbers up with the tools and report what they return."}}
	for i := range 10 {
		name := fmt.Sprintf("t%d", i)
		def["description"] = fmt.Sprintf("Looks up the number after x in table %d.", i)
		b, err := json.Marshal(def)
		if err != nil {
			tb.Fatal(err)
		}
		reg.Tool(name, b)
		reg.Activity(name, agent.Bind(func(ctx context.Context, p lookupParams) (lookupResult, error) {
			return lookupResult{Y: p.X + 1}, nil
		}))
		msgs = append(msgs, message.Message{Type: message.TypeTool, Tool: json.RawMessage(`"` + name + `"`)})
	}
	msgs = append(msgs, message.Text("Look up 0 to 9, one in each table, then say done."))
	return reg, msgs
}

// streamed is a zero-latency model that streams its answers in chunks of
// size bytes, usage with the last.
func streamed(size int, answers ...string) provider.Provider {
	i := 0
	return provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			a := answers[i%len(answers)]
			i++
			for len(a) > size {
				if !yield(&provider.Chunk{Text: a[:size]}, nil) {
					return
				}
				a = a[size:]
			}
			yield(&provider.Chunk{Text: a, Done: true, Usage: &provider.Usage{Input: 100, Output: 50}}, nil)
		}
	})
}

// BenchmarkAgentRunUser is BenchmarkAgentRun as a user writes it: tools
// from Go types with descriptions, an Events consumer, and the answer
// streamed in 8-byte chunks. It reports what a run costs the framework
// beyond the model's own time.
func BenchmarkAgentRunUser(b *testing.B) {
	reg, msgs := userTools(b)
	model := streamed(8, tenCalls(false), `{"calls":[],"output":{"done":true}}`)
	schemaBytes := 0 // what the model reads of the schema at each step
	cfg := agent.Config{Registry: reg, Provider: provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		schemaBytes = len(req.Schema)
		return model.Generate(ctx, req)
	})}
	out := json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean","description":"Whether every number was looked up"}},"required":["done"]}`)
	defer func() { b.ReportMetric(float64(schemaBytes), "schema-bytes") }()
	b.ReportAllocs()
	for b.Loop() {
		finished := 0
		var res *agent.RunResult
		for ev, err := range agent.Events(context.Background(), cfg, out, msgs) {
			if err != nil {
				b.Fatal(err)
			}
			switch ev.Kind {
			case agent.EventCallFinished:
				finished++
			case agent.EventDone:
				res = ev.Result
			}
		}
		if finished != 10 || res == nil || res.Steps != 2 {
			b.Fatalf("%d calls finished, result %+v", finished, res)
		}
	}
}
