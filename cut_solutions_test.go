package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/openai"
	"github.com/augceo/agent/provider/scripted"
)

// errCut is a stream that ended early, as the adapters report it.
var errCut = fmt.Errorf("%w: test: the stream broke", provider.ErrTruncated)

// TestRequestCutSolutions: a provider call for several solutions that
// fails otherwise than by stopping some (a stream cut, an error event)
// loses only those that had not arrived whole. The solutions whose JSON
// is complete and valid stand; the others are asked for again, after a
// Repair event whose Err is the provider's error, and are left out with a
// Lost event when the provider fails again. An answer that arrived whole
// in a call asking again stands too. When nothing arrived whole, or one
// solution was asked, the request fails with the provider's error.
func TestRequestCutSolutions(t *testing.T) {
	for _, tt := range []struct {
		name      string
		n         int
		answers   []scripted.Response
		want      string // the outputs, or the error
		wantAsked []int  // the n of each request
		// The Repair and Lost events, with the solution and its text.
		wantEvents []string
	}{
		{"cut, then answered", 3,
			[]scripted.Response{
				{Solutions: []string{`{"output":1}`, `{"output":2}`, `{"output":`}, Err: errCut},
				{Solutions: []string{`{"output":3}`}},
			},
			"[1 2 3]", []int{3, 1}, []string{`repair 2 {"output":`}},
		{"cut, then failed", 3,
			[]scripted.Response{
				{Solutions: []string{`{"output":1}`, `{"output":`, `{"output":3}`}, Err: errCut},
				{Err: &provider.Error{Provider: "x", Status: 500}},
			},
			"[1 3]", []int{3, 1}, []string{`repair 1 {"output":`, `lost 1 {"output":`}},
		{"cut twice", 3,
			[]scripted.Response{
				{Solutions: []string{`{"output":1}`, `{"output":2}`, `{"output":`}, Err: errCut},
				{Solutions: []string{`{"outp`}, Err: errCut},
			},
			"[1 2]", []int{3, 1}, []string{`repair 2 {"output":`, `lost 2 {"outp`}},
		{"whole but invalid, cut", 3,
			// Complete JSON that fails the schema did not arrive whole
			// either: it is asked for again, not repaired.
			[]scripted.Response{
				{Solutions: []string{`{"output":"one"}`, `{"output":2}`, `{"output":`}, Err: errCut},
				{Solutions: []string{`{"output":1}`, `{"output":3}`}},
			},
			"[1 2 3]", []int{3, 2}, []string{`repair 0 {"output":"one"}`, `repair 2 {"output":`}},
		{"missing, then cut", 3,
			// A server that ignores n gives one; asked for the other two,
			// it gives one whole before the stream breaks.
			[]scripted.Response{
				{Solutions: []string{`{"output":1}`}},
				{Solutions: []string{`{"output":2}`, `{"out`}, Err: errCut},
			},
			"[1 2]", []int{3, 2}, []string{`lost 2 {"out`}},
		{"nothing whole", 3,
			[]scripted.Response{{Solutions: []string{`{"out`, `{"output":`}, Err: errCut}},
			"agent: " + errCut.Error(), []int{3}, nil},
		{"one asked", 1,
			[]scripted.Response{{Solutions: []string{`{"output":1}`}, Err: errCut}},
			"agent: " + errCut.Error(), []int{1}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := scripted.New(tt.answers...)
			cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), N: tt.n, CallbackPath: "output", Logger: slog.New(slog.DiscardHandler)}
			got, events, elements := cutRequest(t, cfg)
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if d := cmp.Diff(events, tt.wantEvents); d != "" {
				t.Errorf("events (-got +want):\n%s", d)
			}
			var asked []int
			for _, r := range p.Requests() {
				asked = append(asked, r.N)
			}
			if d := cmp.Diff(asked, tt.wantAsked); d != "" {
				t.Errorf("n asked (-got +want):\n%s", d)
			}
			// Each solution that stands had its element handed over.
			if strings.HasPrefix(got, "[") {
				if w := strings.Fields(strings.Trim(got, "[]")); !slices.Equal(slices.Sorted(slices.Values(elements)), slices.Sorted(slices.Values(w))) {
					t.Errorf("elements %q, want those of %s", elements, got)
				}
			}
		})
	}
}

// cutRequest runs a request for an integer with cfg and returns its
// outputs (or its error), its Repair and Lost events, and the elements
// handed over for each solution that was not taken back by a Repair or
// a Lost event. Each Repair or Lost event carries the provider's error.
func cutRequest(t *testing.T, cfg agent.Config) (string, []string, []string) {
	t.Helper()
	var events []string
	elements := map[int]string{}
	var resp *agent.Response
	for ev, err := range agent.Stream(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("count")}) {
		switch {
		case err != nil:
			return err.Error(), events, nil
		case ev.Element != nil:
			elements[ev.Element.Index] = string(ev.Element.Value)
		case ev.Repair != nil:
			if !providerErr(ev.Repair) {
				t.Errorf("repair %v, want the provider's error", ev.Repair)
			}
			delete(elements, ev.Repair.Index)
			events = append(events, fmt.Sprintf("repair %d %s", ev.Repair.Index, ev.Repair.Raw))
		case ev.Lost != nil:
			if !providerErr(ev.Lost) {
				t.Errorf("lost %v, want the provider's error", ev.Lost)
			}
			delete(elements, ev.Lost.Index)
			events = append(events, fmt.Sprintf("lost %d %s", ev.Lost.Index, ev.Lost.Raw))
		case ev.Response != nil:
			resp = ev.Response
		}
	}
	var els []string
	for _, v := range elements {
		els = append(els, v)
	}
	return fmt.Sprint(solutionOutputs(resp)), events, els
}

// providerErr reports whether err is a failed provider call's.
func providerErr(err error) bool {
	_, ok := errors.AsType[*provider.Error](err)
	return ok || errors.Is(err, provider.ErrTruncated)
}

// cutStream ends a streamed answer: "cut" breaks the connection mid-way,
// "error" sends the error event of the API (data, as the API words it)
// first, as a server does when it fails after the stream began.
func cutStream(w http.ResponseWriter, how, data string) {
	if how == "error" {
		fmt.Fprint(w, "data: "+data+"\n\n")
		return
	}
	fmt.Fprint(w, `data: {"ch`) // half an event
	w.(http.Flusher).Flush()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// TestOpenAICutSolutions: a Chat Completions stream of three choices,
// their deltas interleaved, breaks (the connection, or an error event)
// after choices 0 and 1 finished and while choice 2 is half written. The
// two stand; choice 2 alone is asked for again (n 1), and stands when
// answered, or is left out with a Lost event when that stream breaks too.
func TestOpenAICutSolutions(t *testing.T) {
	const errorEvent = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	testCutSolutions(t, newOpenAI, func(r *http.Request) (int, error) {
		var body struct{ N int }
		err := json.NewDecoder(r.Body).Decode(&body)
		return body.N, err
	}, func(w http.ResponseWriter, first, again bool, how string) {
		switch {
		case first:
			writeDeltas(w, `0 {"output"`, `1 {"output"`, `2 {"out`, `1 :2}`, `0 :1}`, "1 stop", "0 stop", `2 put":`)
		case again:
			writeDeltas(w, `0 {"output":4}`, "0 stop")
			return
		default:
			writeDeltas(w, `0 {"output"`)
		}
		cutStream(w, how, errorEvent)
	})
}

// writeDeltas writes Chat Completions chunks, each "index content" (a
// content delta of that choice) or "index reason" (its finish_reason),
// with no [DONE] after them.
func writeDeltas(w http.ResponseWriter, deltas ...string) {
	for _, d := range deltas {
		i, text, _ := strings.Cut(d, " ")
		choice := fmt.Sprintf(`{"index":%s,"delta":{},"finish_reason":%q}`, i, text)
		if text != "stop" {
			content, _ := json.Marshal(text)
			choice = fmt.Sprintf(`{"index":%s,"delta":{"content":%s},"finish_reason":null}`, i, content)
		}
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-test\",\"choices\":[%s],\"usage\":null}\n\n", choice)
	}
	w.(http.Flusher).Flush()
}

// TestGeminiCutSolutions: a streamGenerateContent stream of three
// candidates breaks (the connection, or an error event) after candidates
// 0 and 1 finished and while candidate 2 is half written. The two stand;
// candidate 2 alone is asked for again, and stands when answered, or is
// left out with a Lost event when that stream breaks too.
func TestGeminiCutSolutions(t *testing.T) {
	const errorEvent = `{"error": {"code": 503,"message": "The model is overloaded. Please try again later.","status": "UNAVAILABLE"}}`
	testCutSolutions(t, newGemini, func(r *http.Request) (int, error) {
		var body struct {
			GenerationConfig struct {
				CandidateCount int `json:"candidateCount"`
			} `json:"generationConfig"`
		}
		err := json.NewDecoder(r.Body).Decode(&body)
		return body.GenerationConfig.CandidateCount, err
	}, func(w http.ResponseWriter, first, again bool, how string) {
		switch {
		case first:
			writeCandidates(w, `0 {"output"|1 {"output"|2 {"out`, `1 :2} STOP|0 :1} STOP`, `2 put":`)
		case again:
			writeCandidates(w, `0 {"output":4} STOP`)
			return
		default:
			writeCandidates(w, `0 {"output"`)
		}
		cutStream(w, how, errorEvent)
	})
}

// writeCandidates writes streamGenerateContent events, each a list of
// candidates split by "|", each "index text" or "index text REASON" (its
// finishReason).
func writeCandidates(w http.ResponseWriter, events ...string) {
	for _, ev := range events {
		var cands []string
		for c := range strings.SplitSeq(ev, "|") {
			i, text, _ := strings.Cut(c, " ")
			reason := ""
			if t, r, ok := strings.Cut(text, " "); ok {
				text, reason = t, fmt.Sprintf(`,"finishReason":%q`, r)
			}
			js, _ := json.Marshal(text)
			cands = append(cands, fmt.Sprintf(`{"content":{"parts":[{"text":%s}],"role":"model"}%s,"index":%s}`, js, reason, i))
		}
		fmt.Fprintf(w, "data: {\"candidates\":[%s],\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":5,\"totalTokenCount\":14},\"modelVersion\":\"gemini-test\"}\r\n\r\n", strings.Join(cands, ","))
	}
	w.(http.Flusher).Flush()
}

// testCutSolutions runs a streamed request for three solutions against a
// server whose first answer (write with first) gives solutions 0 and 1
// whole and breaks, how says how, while solution 2 is half written; asked
// again for solution 2 alone, it answers it whole (again) or breaks
// again. count reads how many solutions a request asks for.
func testCutSolutions(t *testing.T, newProvider func(url string) (provider.Provider, error),
	count func(*http.Request) (int, error), write func(w http.ResponseWriter, first, again bool, how string)) {
	t.Helper()
	for _, how := range []string{"cut", "error"} {
		for _, again := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, answered again %v", how, again), func(t *testing.T) {
				var asked []int
				cfg := agent.Config{N: 3, Stream: true, CallbackPath: "output", Logger: slog.New(slog.DiscardHandler)}
				var got string
				var events, elements []string
				withServer(t, func(w http.ResponseWriter, r *http.Request) {
					n, err := count(r)
					if err != nil {
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
					asked = append(asked, max(n, 1))
					w.Header().Set("Content-Type", "text/event-stream")
					write(w, len(asked) == 1, again, how)
				}, newProvider, func(p provider.Provider) {
					cfg.Provider, cfg.Registry = p, agent.NewRegistry()
					got, events, elements = cutRequest(t, cfg)
				})
				want, wantEvents := "[1 2 4]", []string{`repair 2 {"output":`}
				if !again {
					want, wantEvents = "[1 2]", append(wantEvents, `lost 2 {"output"`)
				}
				if got != want {
					t.Errorf("got %s, want %s", got, want)
				}
				if d := cmp.Diff(events, wantEvents); d != "" {
					t.Errorf("events (-got +want):\n%s", d)
				}
				if w := strings.Fields(strings.Trim(want, "[]")); !slices.Equal(slices.Sorted(slices.Values(elements)), w) {
					t.Errorf("elements %q, want those of %s", elements, want)
				}
				if d := cmp.Diff(asked, []int{3, 1}); d != "" {
					t.Errorf("solutions asked (-got +want):\n%s", d)
				}
			})
		}
	}
}

// TestRequestLostWhyAskedAgain: a solution cut, then asked again by a
// call that fails before any of it arrives, is lost for both: its Lost
// event's Err wraps the cut and the failure of the call that asked again.
func TestRequestLostWhyAskedAgain(t *testing.T) {
	failed := &provider.Error{Provider: "x", Status: 500, Err: errors.New("overloaded")}
	p := scripted.New(
		scripted.Response{Solutions: []string{`{"output":1}`, `{"output":`}, Err: errCut},
		scripted.Response{Err: failed},
	)
	cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 2, Logger: slog.New(slog.DiscardHandler)}
	var lost *agent.InvalidError
	for ev, err := range agent.Stream(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("count")}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Lost != nil {
			lost = ev.Lost
		}
	}
	if lost == nil {
		t.Fatal("no Lost event")
	}
	if !errors.Is(lost, provider.ErrTruncated) || !errors.Is(lost, failed) {
		t.Errorf("lost: %v; want it to wrap the cut and the failure of the call that asked again", lost)
	}
	if got, want := lost.Error(), "; asked again: provider: x"; !strings.Contains(got, want) {
		t.Errorf("lost: %s; want it to say %q", got, want)
	}
}

// stoppedSolutions is a provider.SolutionError naming some solutions.
type stoppedSolutions []int

func (s stoppedSolutions) Error() string    { return fmt.Sprintf("test: solutions %v stopped", []int(s)) }
func (s stoppedSolutions) Solutions() []int { return s }

// TestRequestStoppedThenCut: a provider call whose stream broke after it
// had stopped a solution (a content filter) that arrived whole reports
// both, as the adapters do: the failure, wrapping the SolutionError. The
// stopped solution is asked for again, as on a stream that ended well,
// and so is the one the failure cut; the one that finished well stands.
// Each Repair event says why its solution was taken back.
func TestRequestStoppedThenCut(t *testing.T) {
	var calls []int
	p := provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		calls = append(calls, req.N)
		return func(yield func(*provider.Chunk, error) bool) {
			chunks := []*provider.Chunk{{Index: 0, Text: `{"output":3}`, Done: true, FinishReason: "stop"}, {Index: 1, Text: `{"output":4}`, Done: true, FinishReason: "stop"}}
			var err error
			if len(calls) == 1 {
				chunks = []*provider.Chunk{
					{Index: 0, Text: `{"output":1}`, Done: true, FinishReason: "content_filter"},
					{Index: 1, Text: `{"output":2}`, Done: true, FinishReason: "stop"},
					{Index: 2, Text: `{"output":`},
				}
				err = fmt.Errorf("%w; before that, %w", errCut, stoppedSolutions{0})
			}
			for _, c := range chunks[:req.N] {
				if !yield(c, nil) {
					return
				}
			}
			if err != nil {
				yield(nil, err)
			}
		}
	})
	cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 3, Logger: slog.New(slog.DiscardHandler)}
	var repairs []string
	var resp *agent.Response
	for ev, err := range agent.Stream(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("count")}) {
		switch {
		case err != nil:
			t.Fatal(err)
		case ev.Repair != nil:
			why := "the call's error"
			if _, ok := ev.Repair.Err.(stoppedSolutions); ok {
				why = "the stop"
			}
			repairs = append(repairs, fmt.Sprintf("%d %s: %s, cut=%v", ev.Repair.Index, ev.Repair.Raw, why, errors.Is(ev.Repair.Err, provider.ErrTruncated)))
		case ev.Response != nil:
			resp = ev.Response
		}
	}
	if got := fmt.Sprint(solutionOutputs(resp)); got != "[3 2 4]" {
		t.Errorf("outputs %s, want [3 2 4]", got)
	}
	if d := cmp.Diff(calls, []int{3, 2}); d != "" {
		t.Errorf("n asked (-got +want):\n%s", d)
	}
	want := []string{`0 {"output":1}: the stop, cut=false`, `2 {"output":: the call's error, cut=true`}
	if d := cmp.Diff(repairs, want); d != "" {
		t.Errorf("repairs (-got +want):\n%s", d)
	}
}

// TestOpenAIFilteredThenCut: a Chat Completions stream of three choices
// breaks (the connection, or an error event) after choice 0 ended with
// finish_reason content_filter and whole JSON, choice 1 ended well, and
// while choice 2 was half written. As when the stream ends well, the
// filtered choice is no solution: it is asked for again with the cut
// one, each after a Repair event, its Err the *openai.FilterError, and
// choice 1 stands.
func TestOpenAIFilteredThenCut(t *testing.T) {
	const errorEvent = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	for _, how := range []string{"cut", "error"} {
		t.Run(how, func(t *testing.T) {
			var asked []int
			withServer(t, func(w http.ResponseWriter, r *http.Request) {
				var body struct{ N int }
				if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				asked = append(asked, body.N)
				if len(asked) > 1 {
					writeChoices(w, true, []choice{{Index: 0, Content: `{"output":3}`, Finish: "stop"}, {Index: 1, Content: `{"output":4}`, Finish: "stop"}})
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				for _, c := range []string{
					`{"index":0,"delta":{"content":"{\"output\":1}"},"finish_reason":"content_filter"}`,
					`{"index":1,"delta":{"content":"{\"output\":2}"},"finish_reason":"stop"}`,
					`{"index":2,"delta":{"content":"{\"output\":"},"finish_reason":null}`,
				} {
					fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-test\",\"choices\":[%s]}\n\n", c)
				}
				cutStream(w, how, errorEvent)
			}, newOpenAI, func(p provider.Provider) {
				cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 3, Stream: true, Logger: slog.New(slog.DiscardHandler)}
				var repairs []string
				var resp *agent.Response
				for ev, err := range agent.Stream(context.Background(), cfg, json.RawMessage(`{"type":"integer"}`), []message.Message{message.Text("count")}) {
					switch {
					case err != nil:
						t.Fatal(err)
					case ev.Repair != nil:
						why := "the call's error"
						if _, ok := ev.Repair.Err.(*openai.FilterError); ok {
							why = "the filter"
						}
						repairs = append(repairs, fmt.Sprintf("%d %s: %s", ev.Repair.Index, ev.Repair.Raw, why))
					case ev.Response != nil:
						resp = ev.Response
					}
				}
				if got := fmt.Sprint(solutionOutputs(resp)); got != "[3 2 4]" {
					t.Errorf("outputs %s, want [3 2 4]", got)
				}
				if d := cmp.Diff(repairs, []string{`0 {"output":1}: the filter`, `2 {"output":: the call's error`}); d != "" {
					t.Errorf("repairs (-got +want):\n%s", d)
				}
				if d := cmp.Diff(asked, []int{3, 2}); d != "" {
					t.Errorf("solutions asked (-got +want):\n%s", d)
				}
			})
		})
	}
}
