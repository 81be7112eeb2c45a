package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// TestReplayStopped replays answers the API stopped before their end: by
// a refusal, by the model's context window, and a forced tool's input cut
// at max_tokens, streamed (before any delta too) and whole. Each yields
// the text that arrived and its stop_reason; the refusal and the context
// window end with a *StopError that says which, and why.
func TestReplayStopped(t *testing.T) {
	for _, tt := range []struct {
		name    string
		file    string
		stream  bool
		tool    bool
		want    *provider.Result
		wantErr *StopError
	}{
		{
			name: "refused mid-stream", file: "stream_refusal.sse", stream: true,
			want: &provider.Result{Texts: []string{`{"output":{"steps":["Mix the`}, Thinking: []string{""},
				FinishReasons: []string{"refusal"}, Usage: provider.Usage{Input: 58, Output: 9}},
			wantErr: &StopError{Reason: "refusal", Category: "cyber", Explanation: "This request was declined because it could enable cyber harm."},
		},
		{
			name: "refused, whole, without a category", file: "message_refusal.json",
			want: &provider.Result{Texts: []string{`{"output":{"steps":["Mix the`}, Thinking: []string{""},
				FinishReasons: []string{"refusal"}, Usage: provider.Usage{Input: 58, Output: 9}},
			wantErr: &StopError{Reason: "refusal"},
		},
		{
			name: "refused in the forced tool", file: "stream_tool_refusal.sse", stream: true, tool: true,
			want: &provider.Result{Texts: []string{`{"output": {"steps": ["Mix the`}, Thinking: []string{""},
				FinishReasons: []string{"refusal"}, Usage: provider.Usage{Input: 472, Output: 12}},
			wantErr: &StopError{Reason: "refusal", Category: "bio", Explanation: "This request was declined because it could enable biological harm."},
		},
		{
			name: "context window filled mid-stream", file: "stream_context_window.sse", stream: true,
			want: &provider.Result{Texts: []string{`{"output":{"answer":"The logs show three`}, Thinking: []string{""},
				FinishReasons: []string{"model_context_window_exceeded"}, Usage: provider.Usage{Input: 1180, Output: 30, CacheRead: 198790}},
			wantErr: &StopError{Reason: "model_context_window_exceeded"},
		},
		{
			name: "context window filled, whole", file: "message_context_window.json",
			want: &provider.Result{Texts: []string{`{"output":{"answer":"The logs show three`}, Thinking: []string{""},
				FinishReasons: []string{"model_context_window_exceeded"}, Usage: provider.Usage{Input: 1180, Output: 30, CacheRead: 198790}},
			wantErr: &StopError{Reason: "model_context_window_exceeded"},
		},
		{
			// No error: the caller reports a cut answer.
			name: "forced tool cut at max_tokens", file: "stream_tool_max_tokens.sse", stream: true, tool: true,
			want: &provider.Result{Texts: []string{`{"output": {"answer": "Paris"}, "calls": [`}, Thinking: []string{""},
				FinishReasons: []string{"max_tokens"}, Usage: provider.Usage{Input: 472, Output: 16}},
		},
		{
			// Cut before any partial_json: the input of content_block_start,
			// {}, without its brace, as a whole answer's.
			name: "forced tool cut at max_tokens before any delta", file: "stream_tool_max_tokens_empty.sse", stream: true, tool: true,
			want: &provider.Result{Texts: []string{`{`}, Thinking: []string{""},
				FinishReasons: []string{"max_tokens"}, Usage: provider.Usage{Input: 472, Output: 3}},
		},
		{
			// The API sends the parameters the model finished, closed:
			// without the brace, the answer reads as cut, as streamed.
			name: "forced tool cut at max_tokens, whole", file: "message_tool_max_tokens.json", tool: true,
			want: &provider.Result{Texts: []string{`{"output":{"answer":"Paris"}`}, Thinking: []string{""},
				FinishReasons: []string{"max_tokens"}, Usage: provider.Usage{Input: 472, Output: 16}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestServer(t, replay(t, tt.file, http.StatusOK, nil), Config{ToolOutput: tt.tool})
			got, err := provider.Collect(p.Generate(t.Context(), request(tt.stream, 1)))
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("result (-got +want):\n%s", diff)
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			se, ok := errors.AsType[*StopError](err)
			if !ok {
				t.Fatalf("got %v, want a *StopError", err)
			}
			if diff := cmp.Diff(se, tt.wantErr); diff != "" {
				t.Errorf("error (-got +want):\n%s", diff)
			}
		})
	}
}

// TestStopReasons sends each stop_reason the API documents after some
// text, in a whole answer, a stream, and a plain request gathered from a
// stream: all keep the text; refusal and model_context_window_exceeded
// end with a *StopError, the others normally.
func TestStopReasons(t *testing.T) {
	for _, tt := range []struct {
		reason string
		fails  bool
	}{
		{"end_turn", false},
		{"max_tokens", false},
		{"stop_sequence", false},
		{"tool_use", false},
		{"pause_turn", false},
		{"refusal", true},
		{"model_context_window_exceeded", true},
	} {
		for _, mode := range []string{"plain", "stream", "gathered"} {
			t.Run(tt.reason+" "+mode, func(t *testing.T) {
				p, _ := newTestServer(t, stopHandler(func(int) string { return tt.reason }), Config{})
				req := request(mode == "stream", 1)
				if mode == "gathered" {
					req.MaxTokens = 64000 // too long for one HTTP response: streamed on the wire
				}
				var chunks int
				got, err := provider.Collect(func(yield func(*provider.Chunk, error) bool) {
					for c, err := range p.Generate(t.Context(), req) {
						if err == nil {
							chunks++
						}
						if !yield(c, err) {
							return
						}
					}
				})
				want := &provider.Result{Texts: []string{`{"output":"Paris`}, Thinking: []string{""},
					FinishReasons: []string{tt.reason}, Usage: provider.Usage{Input: 9, Output: 3}}
				if diff := cmp.Diff(got, want); diff != "" {
					t.Errorf("result (-got +want):\n%s", diff)
				}
				if mode != "stream" && chunks != 1 {
					t.Errorf("%d chunks, want 1", chunks)
				}
				if !tt.fails {
					if err != nil {
						t.Errorf("got %v", err)
					}
					return
				}
				wantErr := &StopError{Index: 0, Reason: tt.reason}
				if se, ok := errors.AsType[*StopError](err); !ok || !cmp.Equal(se, wantErr) {
					t.Errorf("got %#v, want %#v", err, wantErr)
				}
			})
		}
	}
}

// TestStopErrorSeveralSolutions: of N solutions, those refused keep their
// text, the others are whole, and the error, after the chunks of all,
// names the lowest refused, and the others refused as Others. Solution 0
// refused is the case where every other chunk may have arrived before its
// error.
func TestStopErrorSeveralSolutions(t *testing.T) {
	for _, tt := range []struct {
		name    string
		refused []int
	}{
		{"solution 0", []int{0}},
		{"solution 2", []int{2}},
		{"solutions 1 and 2", []int{2, 1}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				p, _ := newTestServer(t, stopHandler(func(i int) string {
					for _, r := range tt.refused {
						if r == i {
							return "refusal"
						}
					}
					return "end_turn"
				}), Config{})
				for range 20 { // the order in which the requests end varies
					got, err := provider.Collect(p.Generate(t.Context(), request(stream, 3)))
					lowest := min(tt.refused[0], tt.refused[len(tt.refused)-1])
					se, ok := errors.AsType[*StopError](err)
					if !ok || se.Index != lowest || se.Reason != "refusal" {
						t.Fatalf("got %v, want the refusal of solution %d", err, lowest)
					}
					if diff := cmp.Diff(se.Solutions(), slices.Sorted(slices.Values(tt.refused))); diff != "" {
						t.Fatalf("solutions stopped (-got +want):\n%s", diff)
					}
					want := []string{`{"output":"Paris`, `{"output":"Paris`, `{"output":"Paris`}
					if diff := cmp.Diff(got.Texts, want); diff != "" {
						t.Fatalf("texts (-got +want):\n%s", diff)
					}
					if got.Usage != (provider.Usage{Input: 27, Output: 9}) {
						t.Fatalf("usage %+v, want the sum over the 3 requests", got.Usage)
					}
				}
			})
		}
	}
}

// stopHandler answers `{"output":"Paris` with the stop_reason that
// reason gives for the solution, whole or streamed as asked.
func stopHandler(reason func(i int) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		fmt.Sscan(r.Header.Get(indexHeader), &i)
		stop := reason(i)
		details := "null"
		if stop == "refusal" {
			details = `{"type":"refusal","category":null,"explanation":null}`
		}
		var req wireRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-1","content":[{"type":"text","text":"{\"output\":\"Paris"}],"stop_reason":%q,"stop_sequence":null,"stop_details":%s,"usage":{"input_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}`, stop, details)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		var b strings.Builder
		ev := func(typ, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"{\"output\":"}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\"Paris"}}`)
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null,"stop_details":%s},"usage":{"output_tokens":3}}`, stop, details))
		ev("message_stop", `{"type":"message_stop"}`)
		fmt.Fprint(w, b.String())
	})
}

func TestStopErrorText(t *testing.T) {
	for _, tt := range []struct {
		err  *StopError
		want string
	}{
		{&StopError{Index: 0, Reason: "refusal", Category: "cyber", Explanation: "This request was declined because it could enable cyber harm."},
			"anthropic: solution 0 stopped (refusal: cyber): This request was declined because it could enable cyber harm."},
		{&StopError{Index: 2, Reason: "refusal"}, "anthropic: solution 2 stopped (refusal)"},
		{&StopError{Index: 1, Reason: "model_context_window_exceeded"},
			"anthropic: solution 1 stopped (model_context_window_exceeded): the conversation filled the model's context window"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// TestToolInputNoDelta: a forced tool whose block ends with no
// partial_json has for input what content_block_start gave, {} from the
// API. Streamed, it is yielded once the stop_reason says how the answer
// ended: whole at tool_use, without its closing brace at max_tokens or
// when the stream ends before the stop_reason, so that a schema that
// accepts {} never takes a cut answer for a whole one. A stream that ends
// after the stop_reason tool_use, before message_stop, lost nothing.
func TestToolInputNoDelta(t *testing.T) {
	for _, tt := range []struct {
		name    string
		stop    string // the stop_reason; none: the stream ends before it
		cut     bool   // whether the stream ends before message_stop
		want    string
		wantErr error
	}{
		{"tool_use", "tool_use", false, `{}`, nil},
		{"max_tokens", "max_tokens", false, `{`, nil},
		{"no message_delta", "", false, `{`, provider.ErrTruncated},
		{"tool_use, no message_stop", "tool_use", true, `{}`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
				ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`)
				ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"solution","input":{}}}`)
				ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`)
				ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
				if tt.stop == "" {
					return
				}
				ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":3}}`, tt.stop))
				if !tt.cut {
					ev("message_stop", `{"type":"message_stop"}`)
				}
			}), Config{ToolOutput: true})
			got, err := provider.Collect(p.Generate(t.Context(), request(true, 1)))
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if len(got.Texts) != 1 || got.Texts[0] != tt.want || got.FinishReasons[0] != tt.stop {
				t.Errorf("got %q finished %q, want %q finished %q", got.Texts, got.FinishReasons, tt.want, tt.stop)
			}
		})
	}
}

// TestStoppedThenFailed: of two solutions, one refused whole and one
// whose request fails (overloaded mid-stream, cut, refused before its
// message_stop), the refused one is reported as stopped, as when the
// other ends well, along with the failure.
func TestStoppedThenFailed(t *testing.T) {
	const start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_%d\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-6\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":58,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"{\\\"output\\\":\\\"x\\\"}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	const refusal = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\",\"stop_details\":{\"type\":\"refusal\",\"category\":\"cyber\"}},\"usage\":{\"output_tokens\":9}}\n\n"
	const stop = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, tt := range []struct {
		name string
		one  string // the stream of solution 1, after start
		want error  // that the error wraps too; nil: a *provider.Error
	}{
		{"overloaded", "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n", nil},
		{"cut", "", provider.ErrTruncated},
		{"refused, then cut", refusal, provider.ErrTruncated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				if r.Header.Get(indexHeader) == "0" {
					fmt.Fprintf(w, start+refusal+stop, 0)
					return
				}
				fmt.Fprintf(w, start+tt.one, 1)
			})
			p, _ := newTestServer(t, h, Config{})
			// A prompt long enough to be cached: request 1 is sent once
			// the response to request 0 began, which its failure then
			// does not cancel.
			req := request(true, 2)
			req.Messages[0].Text = strings.Repeat("You are terse. ", minCachedBody/15+1)
			res, err := provider.Collect(p.Generate(t.Context(), req))
			if diff := cmp.Diff(res.Texts, []string{`{"output":"x"}`, `{"output":"x"}`}); diff != "" {
				t.Errorf("texts (-got +want):\n%s", diff)
			}
			if res.Usage.Input != 116 {
				t.Errorf("usage %+v, want the input of both requests", res.Usage)
			}
			se, ok := errors.AsType[*StopError](err)
			if !ok {
				t.Fatalf("got %v, want a *StopError", err)
			}
			want := []int{0}
			if tt.name == "refused, then cut" {
				want = []int{0, 1}
			}
			if se.Reason != StopRefusal || !cmp.Equal(se.Solutions(), want) {
				t.Errorf("got %#v, want the refusal of solutions %v", se, want)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("got %v, want it to wrap %v", err, tt.want)
			}
			if pe, ok := errors.AsType[*provider.Error](err); tt.want == nil && (!ok || pe.Status != 529) {
				t.Errorf("got %v, want it to wrap the 529", err)
			}
		})
	}
}
