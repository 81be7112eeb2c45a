package message

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/augceo/agent/ref"
)

// benchLog builds a log of n messages: a realistic mix of writes over a
// few hundred paths of three kinds, some instance-targeted. It returns the
// log, the messages, and expressions that read existing values.
func benchLog(tb testing.TB, n int) (*Log, []Message, []ref.Expr) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	date := time.Date(2025, 10, 26, 12, 0, 0, 0, time.UTC)
	kinds := []string{"state", "state", "state", "data", "input"}
	var paths []string
	for s := range 20 {
		for f := range 15 {
			paths = append(paths, fmt.Sprintf("section%d.field%d", s, f))
		}
	}
	lists := []string{"events", "audit.entries", "results"}
	msgs := make([]Message, 0, n)
	msgs = append(msgs, Message{Type: TypeData, Kind: "state", Data: json.RawMessage(`{"title":"bench","section0":{"field0":"init"}}`)})
	for len(msgs) < n {
		kind := kinds[rng.IntN(len(kinds))]
		inst := ""
		if rng.IntN(10) == 0 {
			inst = fmt.Sprintf("i%d", rng.IntN(5))
		}
		var path, method string
		var value string
		switch r := rng.IntN(100); {
		case r < 60:
			path, method, value = paths[rng.IntN(len(paths))], "set", fmt.Sprintf(`{"v":%d,"label":"value %d"}`, r, len(msgs))
		case r < 72:
			path, method, value = paths[rng.IntN(len(paths))], "merge", fmt.Sprintf(`{"extra":%d}`, r)
		case r < 82:
			path, method, value = lists[rng.IntN(len(lists))], "push", fmt.Sprintf(`{"n":%d}`, len(msgs))
		case r < 87:
			path, method, value = lists[rng.IntN(len(lists))], "concat", `[1,2]`
		case r < 92:
			path, method, value = paths[rng.IntN(len(paths))], "assign", `{"label":"assigned"}`
		default:
			msgs = append(msgs, Message{Type: TypeData, Kind: kind, Instance: inst,
				Data: json.RawMessage(fmt.Sprintf(`{"section%d":{"field%d":{"patched":true}}}`, rng.IntN(20), rng.IntN(15)))})
			continue
		}
		call := fmt.Sprintf(`{"_tool":"t","_outputPath":"†%s.%s","_outputMethod":%q,"_instance":%q}`, kind, path, method, inst)
		out, err := Outputs(json.RawMessage(call), json.RawMessage(value), Success, date)
		if err != nil {
			tb.Fatal(err)
		}
		msgs = append(msgs, out...)
	}
	log, err := NewLog(msgs...)
	if err != nil {
		tb.Fatal(err)
	}
	var exprs []ref.Expr
	for i := 0; len(exprs) < 256; i++ {
		var s string
		if i%8 == 7 {
			s = fmt.Sprintf("†state.%s.%d", lists[i%len(lists)], i%3)
		} else {
			s = fmt.Sprintf("†%s.%s.label", kinds[i%3], paths[rng.IntN(len(paths))])
		}
		e, err := ref.Parse(s)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := ref.Eval(log, e); err == nil {
			exprs = append(exprs, e)
		}
	}
	return log, msgs, exprs
}

// BenchmarkResolve measures one reference resolution against logs of
// growing length; the indexed Log must stay flat. The naive sub-benchmarks
// are the reference scan, for scale.
func BenchmarkResolve(b *testing.B) {
	for _, n := range []int{100, 1000, 10000, 100000} {
		log, msgs, exprs := benchLog(b, n)
		b.Run(fmt.Sprintf("log=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := ref.Eval(log, exprs[i%len(exprs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		if n <= 10000 {
			b.Run(fmt.Sprintf("log=%d/naive", n), func(b *testing.B) {
				src := naive{msgs: msgs}
				i := 0
				for b.Loop() {
					if _, err := ref.Eval(src, exprs[i%len(exprs)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkAppend measures adding one output message to a long log.
func BenchmarkAppend(b *testing.B) {
	_, msgs, _ := benchLog(b, 100000)
	b.ReportAllocs()
	for b.Loop() {
		log := &Log{}
		for i := range 1000 {
			if err := log.Append(msgs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkAppendTo measures appending one message to a log of about
// n messages (it grows by a tenth, then starts again); the cost must not
// grow with n.
func BenchmarkAppendTo(b *testing.B) {
	for _, n := range []int{100, 10000} {
		_, msgs, _ := benchLog(b, n+max(n/10, 100))
		b.Run(fmt.Sprintf("log=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var log *Log
			i := len(msgs)
			for b.Loop() {
				if i == len(msgs) {
					b.StopTimer()
					var err error
					if log, err = NewLog(msgs[:n]...); err != nil {
						b.Fatal(err)
					}
					i = n
					runtime.GC() // not the rebuild's garbage: the appends'
					b.StartTimer()
				}
				if err := log.Append(msgs[i]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// agentContext is the context of a small agent run: ten tool messages and
// the user's request.
func agentContext() []Message {
	msgs := make([]Message, 0, 11)
	for i := range 10 {
		msgs = append(msgs, Message{Type: TypeTool, Tool: json.RawMessage(fmt.Sprintf(`{"type":"tool","tool":"t%d"}`, i))})
	}
	return append(msgs, Text("compute"))
}

// agentCalls are ten calls that each write one result to state.
func agentCalls() []json.RawMessage {
	calls := make([]json.RawMessage, 10)
	for i := range calls {
		calls[i] = json.RawMessage(fmt.Sprintf(`{"_tool":"t%d","x":%d,"_outputPath":"†state.r%d"}`, i, i, i))
	}
	return calls
}

// BenchmarkNewLog measures building the log of a run's context.
func BenchmarkNewLog(b *testing.B) {
	msgs := agentContext()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewLog(msgs...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOutputs measures recording ten call results as a run does:
// parse each call's output, make its message, append it to the log.
func BenchmarkOutputs(b *testing.B) {
	ctx, calls := agentContext(), agentCalls()
	results := make([]json.RawMessage, len(calls))
	for i := range results {
		results[i] = json.RawMessage(fmt.Sprintf(`{"y":%d}`, i+1))
	}
	date := time.Date(2025, 10, 26, 12, 0, 0, 123456789, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		log, err := NewLog(ctx...)
		if err != nil {
			b.Fatal(err)
		}
		for i, call := range calls {
			meta, err := ParseCallMeta(call)
			if err != nil {
				b.Fatal(err)
			}
			o, err := ParseOutput(meta)
			if err != nil {
				b.Fatal(err)
			}
			ms, err := o.Messages(call, meta.Instance, results[i], Success, date)
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range ms {
				if err := log.Append(m); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// BenchmarkValue measures the whole value of an identity written by n
// sets of small objects at distinct keys, and a lookup inside one.
func BenchmarkValue(b *testing.B) {
	for _, n := range []int{3, 10} {
		log, err := NewLog(agentContext()...)
		if err != nil {
			b.Fatal(err)
		}
		for i, call := range agentCalls()[:n] {
			ms, err := Outputs(call, json.RawMessage(fmt.Sprintf(`{"y":%d}`, i+1)), Success, time.Unix(0, 0))
			if err != nil {
				b.Fatal(err)
			}
			if err := log.Append(ms...); err != nil {
				b.Fatal(err)
			}
		}
		id := Identity{Kind: KindState}
		b.Run(fmt.Sprintf("writes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := log.Value(id); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
		path := ref.Path{"r1", "y"}
		b.Run(fmt.Sprintf("writes=%d/lookup", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := log.Lookup(KindState, path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAt measures reading every message of a run's log, as a loop
// does over the messages of a step.
func BenchmarkAt(b *testing.B) {
	log, err := NewLog(agentContext()...)
	if err != nil {
		b.Fatal(err)
	}
	for i, call := range agentCalls() {
		ms, err := Outputs(call, json.RawMessage(fmt.Sprintf(`{"y":%d}`, i+1)), Success, time.Unix(0, 0))
		if err != nil {
			b.Fatal(err)
		}
		if err := log.Append(ms...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range log.Len() {
			if log.At(i).Type == "" {
				b.Fatal(i)
			}
		}
	}
}
