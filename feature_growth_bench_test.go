package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
)

// subMark is in the description of the tools whose calls make requests
// of their own (latent tools, delegates): featureProvider answers those
// requests with subAnswer.
const subMark = "(sub)"

// featureProvider answers the loop's requests with answers, in turn, and
// each request of a latent call or a delegate (its first message names
// subMark) with sub.
func featureProvider(answers []string, sub string) provider.Provider {
	i := 0
	return provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		a := sub
		if len(req.Messages) == 0 || !strings.Contains(req.Messages[0].Text, subMark) {
			a = answers[i%len(answers)]
			i++
		}
		return func(yield func(*provider.Chunk, error) bool) {
			yield(&provider.Chunk{Text: a, Done: true, Usage: &provider.Usage{Input: 100, Output: 50}}, nil)
		}
	})
}

// feature is a run of BenchmarkFeatureGrowth.
type feature struct {
	name string
	// setup adds to tenTools' registry and returns messages to put
	// before the context's last (its instruction).
	setup  func(reg *agent.Registry) []message.Message
	answer func(step int) string
	done   string // the last answer, when not BenchmarkLoopGrowth's
	sub    string // the answer of a latent call's or a delegate's request
	config func(run int) agent.Config
	// consume, when set, reads the run's events instead of Run.
	consume func(b *testing.B, events iter.Seq2[agent.RunEvent, error]) *agent.RunResult
}

// BenchmarkFeatureGrowth runs BenchmarkLoopGrowth's run of S steps with
// one call a step, through the features of the loop, and reports the
// framework's time and bytes per step, which must not grow with the run:
//
//   - latent: the call is to a tool with no activity; a request of its
//     own gives its result.
//   - delegate: the call is to an anonymous delegate, a sub-run of its
//     own.
//   - compaction: a small CompactAt, so that the run compacts its
//     rendered context every few steps; the calls write ten keys over
//     and over, so the state the compactions show stays the same size.
//     It also runs S=2000.
//   - durable: journaled in the memory store.
//   - events: an Events consumer that reads every event's call and
//     message.
//   - meta: a meta message in the context, and each answer's meta.
//   - metamsg: each call's activity appends a meta message, a new
//     version.
//   - instances: each call loads a new instance, and writes to the one
//     the step before loaded.
func BenchmarkFeatureGrowth(b *testing.B) {
	for _, f := range features() {
		stepCounts := []int{10, 100, 500}
		if f.name == "compaction" { // a compaction every few steps: the growth shows later
			stepCounts = append(stepCounts, 2000)
		}
		for _, steps := range stepCounts {
			b.Run(fmt.Sprintf("%s/S=%d", f.name, steps), func(b *testing.B) {
				featureGrowth(b, steps, f)
			})
		}
	}
}

// features are the runs of BenchmarkFeatureGrowth.
func features() []feature {
	write := func(i int) string {
		return fmt.Sprintf(`{"calls":[{"_tool":"t%d","x":%d,"_outputPath":"†state.k%d"}],"output":null}`, i%10, i, i)
	}
	none := func(int) agent.Config { return agent.Config{} }
	outTool := `{"type":"object","description":"Guesses y from x ` + subMark + `.","properties":{"x":{"type":"integer"},"_output":{"type":"object","properties":{"y":{"type":"integer"}}}},"required":["x"]%s}`
	return []feature{
		{name: "latent", setup: func(reg *agent.Registry) []message.Message {
			reg.Tool("guess", json.RawMessage(fmt.Sprintf(outTool, "")))
			return []message.Message{message.Tool("guess")}
		}, answer: func(i int) string {
			return fmt.Sprintf(`{"calls":[{"_tool":"guess","x":%d,"_outputPath":"†state.k%d"}],"output":null}`, i, i)
		}, sub: `{"output":{"y":1}}`, config: none},
		{name: "delegate", setup: func(reg *agent.Registry) []message.Message {
			reg.Tool("helper", json.RawMessage(fmt.Sprintf(outTool, `,"_delegate":"anonymous"`)))
			return []message.Message{message.Tool("helper")}
		}, answer: func(i int) string {
			return fmt.Sprintf(`{"calls":[{"_tool":"helper","x":%d,"_outputPath":"†state.k%d"}],"output":null}`, i, i)
		}, sub: `{"output":{"y":1}}`, config: none},
		{name: "compaction", answer: func(i int) string {
			return fmt.Sprintf(`{"calls":[{"_tool":"t%d","x":%d,"_outputPath":"†state.k%d"}],"output":null}`, i%10, i, i%10)
		}, config: func(int) agent.Config { return agent.Config{CompactAt: 400} }},
		{name: "durable", answer: write, config: func(run int) agent.Config {
			return agent.Config{Store: store.NewMemory(), RunID: fmt.Sprint("r", run)}
		}},
		{name: "events", answer: write, config: none, consume: func(b *testing.B, events iter.Seq2[agent.RunEvent, error]) *agent.RunResult {
			var res *agent.RunResult
			n := 0
			for ev, err := range events {
				if err != nil {
					b.Fatal(err)
				}
				if ev.Call != nil {
					n += len(ev.Call.Raw)
				}
				if ev.Message != nil {
					n += len(ev.Message.Data)
				}
				if ev.Kind == agent.EventDone {
					res = ev.Result
				}
			}
			if n == 0 {
				b.Fatal("no calls or messages")
			}
			return res
		}},
		{name: "meta", setup: func(reg *agent.Registry) []message.Message {
			return []message.Message{{Type: message.TypeMeta, Meta: json.RawMessage(`{"path":"/x","version":"1.0.0"}`)}}
		}, answer: func(i int) string {
			return fmt.Sprintf(`{"meta":{"path":"/x","version":"1.0.1"},"calls":[{"_tool":"t%d","x":%d,"_outputPath":"†state.k%d"}],"output":null}`, i%10, i, i)
		}, done: `{"meta":{"path":"/x","version":"1.0.1"},"calls":[],"output":{"done":true}}`, config: none},
		{name: "metamsg", setup: func(reg *agent.Registry) []message.Message {
			reg.Tool("bump", json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}`))
			reg.Activity("bump", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
				var p struct{ V int }
				_ = json.Unmarshal(c.Args(), &p)
				return &agent.Result{Messages: []message.Message{{Type: message.TypeMeta, Meta: json.RawMessage(fmt.Sprintf(`{"path":"/x","version":"1.0.%d"}`, p.V))}}}, nil
			}))
			return []message.Message{message.Tool("bump"), {Type: message.TypeMeta, Meta: json.RawMessage(`{"path":"/x","version":"1.0.0"}`)}}
		}, answer: func(i int) string {
			return fmt.Sprintf(`{"meta":{"path":"/x","version":"1.0.%d"},"calls":[{"_tool":"bump","v":%d,"_outputPath":"†state.v"}],"output":null}`, i+1, i+1)
		}, config: none},
		{name: "instances", setup: func(reg *agent.Registry) []message.Message {
			addLoad(reg)
			in := message.Data(message.KindInput, json.RawMessage(`{"item":"i0"}`))
			in.Instance = "i0"
			return []message.Message{message.Tool("load"), in}
		}, answer: func(i int) string {
			return fmt.Sprintf(`{"calls":[{"_tool":"load","id":"i%d"},{"_tool":"t%d","x":%d,"_instance":"i%d","_outputPath":"†state.k"}],"output":null}`, i+1, i%10, i, i)
		}, config: func(int) agent.Config { return agent.Config{Concurrency: 1} }},
	}
}

// featureGrowth is growth for a feature.
func featureGrowth(b *testing.B, steps int, f feature) {
	reg, msgs := tenTools()
	if f.setup != nil {
		last := msgs[len(msgs)-1]
		msgs = append(msgs[:len(msgs)-1], f.setup(reg)...)
		msgs = append(msgs, last)
	}
	answers := make([]string, steps)
	for i := range steps - 1 {
		answers[i] = f.answer(i)
	}
	answers[steps-1] = `{"calls":[],"output":{"done":true}}`
	if f.done != "" {
		answers[steps-1] = f.done
	}
	if f.name == "metamsg" { // the version the last step's calls bumped to, bumped
		answers[steps-1] = fmt.Sprintf(`{"meta":{"path":"/x","version":"1.0.%d"},"calls":[],"output":{"done":true}}`, steps)
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	runs := 0
	for b.Loop() {
		runs++
		cfg := f.config(runs)
		cfg.Provider, cfg.Registry, cfg.MaxSteps = featureProvider(answers, f.sub), reg, steps
		var res *agent.RunResult
		var err error
		if f.consume != nil {
			res = f.consume(b, agent.Events(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), msgs))
		} else {
			res, err = agent.Run(context.Background(), cfg, json.RawMessage(`{"type":"object"}`), msgs)
		}
		if err != nil || res == nil || res.Steps != steps {
			b.Fatal(err)
		}
		if runs == 1 {
			if errs := planErrors(res.Log); len(errs) > 0 {
				b.Fatalf("errors: %q", errs[:min(3, len(errs))])
			}
		}
	}
	runtime.ReadMemStats(&ms1)
	perStep := float64(b.N * steps)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perStep, "ns/step")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/perStep, "B/step")
}
