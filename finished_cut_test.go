package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/store"
)

// TestRequestCutAfterFinish: with N 1, a stream that breaks once the
// answer had ended well (OpenAI's finish_reason "stop", Anthropic's
// message_delta with end_turn, Gemini's event with finishReason STOP)
// lost nothing of it: the request succeeds, with the usage the provider
// had said. OpenAI says it only in the chunk the cut took: the Response
// says the usage was lost, and the run's log warns of it. A stream cut
// before the answer ended fails the request, as before.
func TestRequestCutAfterFinish(t *testing.T) {
	const warning = `level=WARN msg="the provider did not say the usage of a call (its stream broke after the answer, or the server does not report usage): the usage lacks what the call was billed, and a TokenBudget does not count it"`
	openaiAnswer := func(w http.ResponseWriter, finished bool) {
		writeDeltas(w, `0 {"output":1}`)
		if finished {
			writeDeltas(w, "0 stop")
		}
	}
	anthropicAnswer := func(w http.ResponseWriter, finished bool) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"{\\\"output\\\":1}\"}}\n\n")
		if finished {
			fmt.Fprint(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
			fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n")
		}
	}
	geminiAnswer := func(w http.ResponseWriter, finished bool) {
		w.Header().Set("Content-Type", "text/event-stream")
		if finished {
			writeCandidates(w, `0 {"output":1} STOP`)
		} else {
			writeCandidates(w, `0 {"output":1}`)
		}
	}
	for _, tt := range []struct {
		name      string
		new       func(url string) (provider.Provider, error)
		answer    func(w http.ResponseWriter, finished bool)
		finished  bool
		wantUsage provider.Usage
		wantLost  bool
	}{
		{"OpenAI, cut after stop", newOpenAI, openaiAnswer, true, provider.Usage{}, true},
		{"OpenAI, cut before stop", newOpenAI, openaiAnswer, false, provider.Usage{}, false},
		{"Anthropic, cut after end_turn", newAnthropic, anthropicAnswer, true, provider.Usage{Input: 9, Output: 5}, false},
		{"Anthropic, cut before message_delta", newAnthropic, anthropicAnswer, false, provider.Usage{}, false},
		{"Gemini, cut after STOP", newGemini, geminiAnswer, true, provider.Usage{Input: 9, Output: 5}, false},
		{"Gemini, cut before STOP", newGemini, geminiAnswer, false, provider.Usage{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tt.answer(w, tt.finished)
				w.(http.Flusher).Flush()
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					conn.Close() // the chunked body never ends
				}
			}))
			defer srv.Close()
			p, err := tt.new(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
			cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 1, Stream: true, Logger: log}
			resp, err := agent.Request(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("count")})
			if !tt.finished {
				if !errors.Is(err, provider.ErrTruncated) {
					t.Fatalf("error %v, want a cut", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if got := fmt.Sprint(solutionOutputs(resp)); got != "[1]" {
				t.Errorf("outputs %s, want [1]", got)
			}
			if diff := cmp.Diff(resp.Usage, tt.wantUsage); diff != "" {
				t.Errorf("usage (-got +want):\n%s", diff)
			}
			if resp.UsageLost != tt.wantLost {
				t.Errorf("UsageLost %v, want %v", resp.UsageLost, tt.wantLost)
			}
			if got := strings.Contains(logs.String(), warning); got != tt.wantLost {
				t.Errorf("log %q, want the warning: %v", logs.String(), tt.wantLost)
			}
		})
	}
}

// TestRunEventUsageLost: a run's usage event says when its request's
// usage was lost, so that a consumer adding up cost knows its sum is
// short.
func TestRunEventUsageLost(t *testing.T) {
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			yield(&provider.Chunk{Text: `{"output":"done"}`, Done: true, FinishReason: "stop", UsageLost: true}, nil)
		}
	})
	var lost []bool
	for ev, err := range agent.Events(t.Context(), agent.Config{Provider: p, Registry: agent.NewRegistry()}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"text","text":"go"}]`)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventUsage {
			lost = append(lost, ev.UsageLost)
		}
	}
	if len(lost) != 1 || !lost[0] {
		t.Errorf("usage events say lost %v, want [true]", lost)
	}
}

// TestDurableUsageLost: a durable run's journal marks the usage entry of
// a request whose usage was lost.
func TestDurableUsageLost(t *testing.T) {
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			yield(&provider.Chunk{Text: `{"output":"done"}`, Done: true, FinishReason: "stop", UsageLost: true}, nil)
		}
	})
	st := store.NewMemory()
	if _, err := agent.Run(t.Context(), agent.Config{Provider: p, Registry: agent.NewRegistry(), Store: st, RunID: "l"}, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"text","text":"go"}]`)); err != nil {
		t.Fatal(err)
	}
	var total store.UsageTotal
	for e, err := range st.Entries(t.Context(), "l", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if err := total.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if total.Lost() != 1 {
		t.Errorf("%d usage entries marked lost, want 1", total.Lost())
	}
}

// TestRunUsageNotSaid: an OpenAI-compatible server that ignores
// stream_options.include_usage says no usage at all. Every usage event of
// the run says its usage was lost, and the log warns of it once for the
// run, not at every step; the TokenBudget, which counts only the tokens
// a provider said, does not stop the run.
func TestRunUsageNotSaid(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if calls.Add(1) == 1 {
			writeDeltas(w, `0 {"output":null}`, "0 stop")
		} else {
			writeDeltas(w, `0 {"output":"done"}`, "0 stop")
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	p, err := newOpenAI(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), Stream: true, TokenBudget: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	var lost []bool
	var res *agent.RunResult
	for ev, err := range agent.Events(t.Context(), cfg, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"text","text":"go"}]`)) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case agent.EventUsage:
			lost = append(lost, ev.UsageLost)
		case agent.EventDone:
			res = ev.Result
		}
	}
	if !cmp.Equal(lost, []bool{true, true}) {
		t.Errorf("usage events say lost %v, want [true true]", lost)
	}
	if res == nil || res.Steps != 2 {
		t.Errorf("result %+v, want a run of 2 steps", res)
	}
	const warning = "msg=\"the provider did not say the usage of a call"
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("log %q has the warning %d times, want once", logs.String(), n)
	}
}

// TestRepairUsageNotSaid: a repair's request whose server says no usage
// warns in the Request's own logger, and once with the request it
// repairs: the warning is the Request's, however many calls it made.
func TestRepairUsageNotSaid(t *testing.T) {
	const usageChunk = "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-test\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2,\"total_tokens\":12}}\n\n"
	for _, tt := range []struct {
		name       string
		firstCount bool // whether the first answer says its usage
	}{
		{"first said", true},
		{"none said", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				if calls.Add(1) == 1 {
					writeDeltas(w, `0 {"output":5}`, "0 stop") // not a string: repaired
					if tt.firstCount {
						io.WriteString(w, usageChunk)
					}
				} else {
					writeDeltas(w, `0 {"output":"done"}`, "0 stop")
				}
				io.WriteString(w, "data: [DONE]\n\n")
			}))
			defer srv.Close()
			p, err := newOpenAI(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), Stream: true,
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
			resp, err := agent.Request(t.Context(), cfg, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"text","text":"go"}]`))
			if err != nil {
				t.Fatal(err)
			}
			if calls.Load() != 2 || !resp.UsageLost {
				t.Errorf("%d calls, UsageLost %v; want a repair, and the usage lost", calls.Load(), resp.UsageLost)
			}
			const warning = "msg=\"the provider did not say the usage of a call"
			if n := strings.Count(logs.String(), warning); n != 1 {
				t.Errorf("log %q has the warning %d times, want once", logs.String(), n)
			}
		})
	}
}

// TestDelegateUsageNotSaid: a run whose delegate's sub-run asks a
// server that says no usage warns of it once, as a run whose own steps
// do: the sub-run is part of the run's call, not a run of its own.
func TestDelegateUsageNotSaid(t *testing.T) {
	reg := agent.NewRegistry()
	idea, err := agent.ParseIdea([]byte(`{"schema":{"type":"string"},"context":[{"type":"system","message":"Send it."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg.Idea("sender", idea)
	reg.Tool("send", json.RawMessage(`{"type":"object","_delegate":"sender","properties":{"text":{"type":"string"}}}`))
	sp := scripted.New(
		scripted.Response{Solutions: []string{`{"calls":[{"_tool":"send","text":"a","_outputPath":"†state.a"},{"_tool":"send","text":"b","_outputPath":"†state.b"}],"output":null}`}},
		scripted.Response{Solutions: []string{`{"output":"sent"}`}},
		scripted.Response{Solutions: []string{`{"output":"sent"}`}},
		scripted.Response{Solutions: []string{`{"calls":[],"output":"done"}`}},
	)
	p := usageNotSaid(sp)
	var logs bytes.Buffer
	cfg := agent.Config{Provider: p, Registry: reg, Concurrency: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	res, err := agent.Run(t.Context(), cfg, json.RawMessage(`{"type":"string"}`), ctxOf(t, `[{"type":"tool","tool":"send"},{"type":"text","text":"Send them"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Solution.Output) != `"done"` || len(sp.Requests()) != 4 {
		t.Fatalf("output %s after %d requests, want \"done\" after 4", res.Solution.Output, len(sp.Requests()))
	}
	const warning = "msg=\"the provider did not say the usage of a call"
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("log %q has the warning %d times, want once", logs.String(), n)
	}
}

// usageNotSaid returns a provider that answers as p does, and says no
// usage: every last chunk says it was lost.
func usageNotSaid(p provider.Provider) provider.Provider {
	return provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		return func(yield func(*provider.Chunk, error) bool) {
			for c, err := range p.Generate(ctx, req) {
				if c != nil && c.Usage != nil {
					c.Usage, c.UsageLost = nil, true
				}
				if !yield(c, err) {
					return
				}
			}
		}
	})
}

// TestPlanUsageNotSaid: a plan whose latent calls ask a server that says
// no usage warns of it once for the plan, not once a call.
func TestPlanUsageNotSaid(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("guess", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"_output":{"type":"integer"}},"required":["q"]}`))
	sp := scripted.New(
		scripted.Response{Solutions: []string{`{"output":1}`}},
		scripted.Response{Solutions: []string{`{"output":2}`}},
		scripted.Response{Solutions: []string{`{"output":3}`}},
	)
	var logs bytes.Buffer
	cfg := agent.Config{Provider: usageNotSaid(sp), Registry: reg, Concurrency: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	plan := []json.RawMessage{
		json.RawMessage(`{"_tool":"guess","q":"a","_outputPath":"†state.a"}`),
		json.RawMessage(`{"_tool":"guess","q":"b","_outputPath":"†state.b"}`),
		json.RawMessage(`{"_tool":"guess","q":"c","_outputPath":"†state.c"}`),
	}
	res, err := agent.ExecutePlan(t.Context(), cfg, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ref.EvalString(res.Log, "†state.c"); err != nil || len(sp.Requests()) != 3 {
		t.Fatalf("state.c %s (%v) after %d requests, want an answer of each of 3", got, err, len(sp.Requests()))
	}
	const warning = "msg=\"the provider did not say the usage of a call"
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("log %q has the warning %d times, want once", logs.String(), n)
	}
}

// TestResumeUsageNotSaid: a run cut while its step's latent calls ran,
// resumed against a server that says no usage, warns of it once, its
// resumed calls' requests included.
func TestResumeUsageNotSaid(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("guess", json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"_output":{"type":"integer"}},"required":["q"]}`))
	msgs := ctxOf(t, `[{"type":"tool","tool":"guess"},{"type":"text","text":"go"}]`)
	first := scripted.Solutions(`{"calls":[{"_tool":"guess","q":"a","_outputPath":"†state.a"},{"_tool":"guess","q":"b","_outputPath":"†state.b"}],"output":null}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cut := provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		if len(first.Requests()) == 1 { // the first latent call's
			cancel()
			return func(yield func(*provider.Chunk, error) bool) { yield(nil, c.Err()) }
		}
		return first.Generate(c, req)
	})
	st := store.NewMemory()
	cfg := agent.Config{Registry: reg, Concurrency: 1, Store: st, RunID: "r", Provider: cut}
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{"type":"string"}`), msgs); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	rest := scripted.Solutions(`{"output":1}`, `{"output":2}`, `{"calls":[],"output":"done"}`)
	var logs bytes.Buffer
	cfg.Provider, cfg.RunID = usageNotSaid(rest), ""
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, err := agent.Resume(t.Context(), cfg, "r")
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if string(res.Solution.Output) != `"done"` || len(rest.Requests()) != 3 {
		t.Fatalf("output %s after %d requests, want \"done\" after 3", res.Solution.Output, len(rest.Requests()))
	}
	const warning = "msg=\"the provider did not say the usage of a call"
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Errorf("log %q has the warning %d times, want once", logs.String(), n)
	}
}
