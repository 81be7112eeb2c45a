package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/anthropic"
	"github.com/augceo/agent/provider/scripted"
	"github.com/google/go-cmp/cmp"
)

// TestRequestLostSolutions: of three solutions, the second is invalid.
// When its repair is refused, fails, or is invalid again past
// Config.MaxRepairs, the two others stand: a Lost event names it, with
// why, after its Repair and the events of the answer that repaired it,
// and a warning names it in the log. The elements and output of the
// good solutions, streamed before, are theirs in the Response.
func TestRequestLostSolutions(t *testing.T) {
	first := scripted.Response{Solutions: []string{`{"output":1}`, `{"output":"two"}`, `{"output":3}`}, Usage: provider.Usage{Input: 10}}
	for _, tt := range []struct {
		name       string
		repair     scripted.Response
		wantEvents []string // the events after the repair event
		wantRaw    string
		wantErr    string // in the Lost event's error
		wantAs     func(error) bool
	}{
		{"repair refused",
			scripted.Response{Solutions: []string{`{"outp`}, FinishReason: "refusal", Err: stopError{0}},
			nil, `{"output":"two"}`,
			`agent: solution 1 invalid after 1 attempts: at /output: expected null or integer, got string; its repair failed: provider: test: solutions [0] stopped`,
			func(err error) bool { _, ok := errors.AsType[stopError](err); return ok }},
		{"repair failed",
			scripted.Response{Err: &provider.Error{Provider: "x", Status: 500}},
			nil, `{"output":"two"}`,
			`agent: solution 1 invalid after 1 attempts: at /output: expected null or integer, got string; its repair failed: provider: x: 500 Internal Server Error`,
			func(err error) bool { _, ok := errors.AsType[*provider.Error](err); return ok }},
		{"still invalid",
			scripted.Response{Solutions: []string{`{"output":"still two"}`}, Usage: provider.Usage{Input: 10}},
			[]string{`element 1 "still two"`, `output 1 "still two"`}, `{"output":"still two"}`,
			`agent: solution 1 invalid after 2 attempts: at /output: expected null or integer, got string`,
			func(err error) bool { _, ok := errors.AsType[*agent.InvalidError](err); return ok }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log strings.Builder
			cfg := agent.Config{Provider: scripted.New(first, tt.repair), Registry: agent.NewRegistry(), N: 3, MaxRepairs: 1,
				CallbackPath: "output", Logger: slog.New(slog.NewTextHandler(&log, nil))}
			var events []string
			var lost *agent.InvalidError
			var resp *agent.Response
			for ev, err := range agent.Stream(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("x")}) {
				switch {
				case err != nil:
					t.Fatal(err)
				case ev.Element != nil:
					events = append(events, fmt.Sprintf("element %d %s", ev.Element.Index, ev.Element.Value))
				case ev.Output != nil:
					events = append(events, fmt.Sprintf("output %d %s", ev.Output.Index, ev.Output.JSON))
				case ev.Repair != nil:
					events = append(events, fmt.Sprintf("repair %d", ev.Repair.Index))
				case ev.Lost != nil:
					lost = ev.Lost
					events = append(events, fmt.Sprintf("lost %d", ev.Lost.Index))
				case ev.Response != nil:
					resp = ev.Response
					events = append(events, "response")
				}
			}
			want := []string{"element 0 1", "output 0 1", `element 1 "two"`, `output 1 "two"`, "element 2 3", "output 2 3", "repair 1"}
			want = append(append(want, tt.wantEvents...), "lost 1", "response")
			if d := cmp.Diff(events, want); d != "" {
				t.Errorf("events (-got +want):\n%s", d)
			}
			if lost == nil || resp == nil {
				t.Fatalf("lost %v, response %v", lost, resp)
			}
			if got := lost.Error(); got != tt.wantErr || lost.Raw != tt.wantRaw || !tt.wantAs(lost) {
				t.Errorf("lost %s, raw %s\nwant %s, raw %s", got, lost.Raw, tt.wantErr, tt.wantRaw)
			}
			if d := cmp.Diff(solutionOutputs(resp), []string{"1", "3"}); d != "" {
				t.Errorf("outputs (-got +want):\n%s", d)
			}
			if resp.Usage.Input != 10+tt.repair.Usage.Input {
				t.Errorf("usage %+v, want every request's", resp.Usage)
			}
			if l := log.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "index=1") || !strings.Contains(l, "its repair failed") != (tt.name == "still invalid") {
				t.Errorf("log %q, want a warning naming solution 1 and why", l)
			}
		})
	}
}

// TestRequestNoGoodSolution: a request for several solutions none of
// which is good fails with a *NoSolutionError that names why each
// failed, through which errors.As finds each one's error; the solutions
// the provider did not give are counted. With N 1, the error stays the
// solution's own.
func TestRequestNoGoodSolution(t *testing.T) {
	out := json.RawMessage(`{"type":"integer"}`)
	for _, tt := range []struct {
		name    string
		cfg     agent.Config
		answers []scripted.Response
		want    string
	}{
		{"both invalid", agent.Config{N: 2, MaxRepairs: -1},
			[]scripted.Response{{Solutions: []string{`{"output":"one"}`, `{"output":`}}},
			`agent: no good solution of 2: solution 0 invalid after 1 attempts: at /output: expected null or integer, got string; ` +
				`solution 1 invalid after 1 attempts: invalid JSON at byte 10 of 10: unexpected end of JSON input`},
		{"stopped, then invalid", agent.Config{N: 2, MaxRepairs: -1},
			[]scripted.Response{
				{Solutions: []string{`{"outp`, `{"output":"two"}`}, Err: stopError{0}},
				{Solutions: []string{`{"output"`}, Err: stopError{0}},
			},
			`agent: no good solution of 2: solution 0 invalid after 2 attempts: test: solutions [0] stopped; ` +
				`solution 1 invalid after 1 attempts: at /output: expected null or integer, got string`},
		{"one given, repair failed", agent.Config{N: 3, MaxRepairs: 1},
			[]scripted.Response{
				{Solutions: []string{`{"output":"one"}`}},
				{Err: &provider.Error{Provider: "x", Status: 429}},
				{Err: &provider.Error{Provider: "x", Status: 500}},
			},
			`agent: no good solution of 3: solution 0 invalid after 1 attempts: at /output: expected null or integer, got string; ` +
				`its repair failed: provider: x: 500 Internal Server Error; 2 not given`},
		{"one asked", agent.Config{MaxRepairs: -1},
			[]scripted.Response{{Solutions: []string{`{"output":"one"}`}}},
			`agent: solution 0 invalid after 1 attempts: at /output: expected null or integer, got string`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Provider, cfg.Registry = scripted.New(tt.answers...), agent.NewRegistry()
			cfg.Logger = slog.New(slog.DiscardHandler)
			resp, err := agent.Request(context.Background(), cfg, out, []message.Message{message.Text("x")})
			if err == nil {
				t.Fatalf("got %v, want an error", solutionOutputs(resp))
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if _, ok := errors.AsType[*agent.InvalidError](err); !ok {
				t.Errorf("errors.As finds no *InvalidError in %v", err)
			}
			nse, ok := errors.AsType[*agent.NoSolutionError](err)
			if ok != (cfg.N > 1) {
				t.Fatalf("got %T, NoSolutionError only with N > 1", err)
			}
			if ok && nse.N != cfg.N {
				t.Errorf("NoSolutionError %+v", nse)
			}
		})
	}
}

// TestAnthropicLostSolution: of three solutions (three requests to a
// server speaking the Messages API, whole and streamed), one answers
// invalid, and its repair is refused, fails with a 500, or is invalid
// again. The other two stand, with the elements streamed for them; the
// Lost event names the one left out.
func TestAnthropicLostSolution(t *testing.T) {
	out := json.RawMessage(`{"type":"integer"}`)
	for _, stream := range []bool{false, true} {
		for _, tt := range []struct {
			name   string
			repair func(w http.ResponseWriter, stream bool) // the fourth request's answer
			want   func(error) bool                         // about the Lost event's error
		}{
			{"refused", func(w http.ResponseWriter, stream bool) {
				writeAnthropic(w, stream, `{\"outp`, "refusal")
			}, func(err error) bool { _, ok := errors.AsType[*anthropic.StopError](err); return ok }},
			{"failed", func(w http.ResponseWriter, stream bool) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprint(w, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`)
			}, func(err error) bool { pe, ok := errors.AsType[*provider.Error](err); return ok && pe.Status == 500 }},
			{"invalid again", func(w http.ResponseWriter, stream bool) {
				writeAnthropic(w, stream, `{\"output\":\"still two\"}`, "end_turn")
			}, func(err error) bool { return !strings.Contains(err.Error(), "repair failed") }},
		} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				var sent atomic.Int32
				srv := func(w http.ResponseWriter, r *http.Request) {
					// The API streams when the body says so, as the
					// adapter may ask for a stream it gathers.
					body, _ := io.ReadAll(r.Body)
					stream := bytes.Contains(body, []byte(`"stream":true`))
					switch k := sent.Add(1); k {
					case 2:
						writeAnthropic(w, stream, `{\"output\":\"two\"}`, "end_turn")
					case 4:
						tt.repair(w, stream)
					default:
						writeAnthropic(w, stream, fmt.Sprintf(`{\"output\":%d}`, k), "end_turn")
					}
				}
				// The output of each solution as its events wrote it,
				// and in a stream its elements at the callback path.
				outputs := map[int]string{}
				elements := map[int][]string{}
				var lost []*agent.InvalidError
				var resp *agent.Response
				var events []string
				cfg := agent.Config{N: 3, Stream: stream, MaxRepairs: 1, Logger: slog.New(slog.DiscardHandler)}
				if stream {
					cfg.CallbackPath = "output"
				}
				withServer(t, srv, newAnthropic, func(p provider.Provider) {
					cfg.Provider, cfg.Registry = p, agent.NewRegistry()
					for ev, err := range agent.Stream(context.Background(), cfg, out, []message.Message{message.Text("count")}) {
						switch {
						case err != nil:
							t.Fatal(err)
						case ev.Output != nil:
							outputs[ev.Output.Index] += ev.Output.JSON
						case ev.Element != nil:
							elements[ev.Element.Index] = append(elements[ev.Element.Index], string(ev.Element.Value))
							events = append(events, fmt.Sprintf("element %d", ev.Element.Index))
						case ev.Repair != nil:
							delete(outputs, ev.Repair.Index) // its pieces start again
							events = append(events, fmt.Sprintf("repair %d", ev.Repair.Index))
						case ev.Lost != nil:
							lost = append(lost, ev.Lost)
							events = append(events, fmt.Sprintf("lost %d", ev.Lost.Index))
						case ev.Response != nil:
							resp = ev.Response
							events = append(events, "response")
						}
					}
				})
				if len(lost) != 1 || resp == nil {
					t.Fatalf("lost %v, response %v; events %q", lost, resp, events)
				}
				bad := lost[0].Index
				if !strings.Contains(lost[0].Error(), "expected null or integer, got string") || !tt.want(lost[0]) {
					t.Errorf("lost: %v", lost[0])
				}
				if got := sent.Load(); got != 4 {
					t.Errorf("%d requests, want 4", got)
				}
				// The solutions left are those not lost, in order, each
				// with the output and the element streamed for it.
				var kept []string
				for i := range 3 {
					if i == bad {
						continue
					}
					kept = append(kept, outputs[i])
					if stream && !slices.Equal(elements[i], []string{outputs[i]}) {
						t.Errorf("solution %d: elements %q, output %s", i, elements[i], outputs[i])
					}
				}
				if d := cmp.Diff(solutionOutputs(resp), kept); d != "" {
					t.Errorf("outputs (-got +want):\n%s", d)
				}
				if got := slices.Sorted(slices.Values(kept)); !slices.Equal(got, []string{"1", "3"}) {
					t.Errorf("kept %v, want 1 and 3", got)
				}
				if i := slices.Index(events, fmt.Sprintf("repair %d", bad)); i < 0 || events[len(events)-2] != fmt.Sprintf("lost %d", bad) || events[len(events)-1] != "response" {
					t.Errorf("events %q: want the repair, then the Lost event, then the response", events)
				}
			})
		}
	}
}

// withServer runs f with the provider newProvider makes for a test server
// answering with h; the server is closed, its handlers done, on return.
func withServer(t *testing.T, h http.HandlerFunc, newProvider func(url string) (provider.Provider, error), f func(provider.Provider)) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	p, err := newProvider(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	f(p)
}
