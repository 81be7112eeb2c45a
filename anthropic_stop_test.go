package agent_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/anthropic"
)

// TestAnthropicStoppedAnswers runs requests against Anthropic answers the
// API stopped short, whole and streamed: one cut by max_tokens is re-asked
// as cut and ends with ErrAnswerCut; one refused, or stopped by the
// model's context window, ends the request with the adapter's
// *anthropic.StopError after one request, without a repair that would be
// refused again, or have even less room.
func TestAnthropicStoppedAnswers(t *testing.T) {
	testStoppedAnswers(t, []stoppedAnswer{
		{"max_tokens", true, 2},
		{"refusal", false, 1},
		{"model_context_window_exceeded", false, 1},
	}, func(w http.ResponseWriter, stream bool, reason string) {
		writeAnthropic(w, stream, `{\"output\":{\"n\":12`, reason)
	}, newAnthropic, func(t *testing.T, err error, reason string) {
		if se, ok := errors.AsType[*anthropic.StopError](err); !ok || se.Reason != reason {
			t.Errorf("got %v, want a *anthropic.StopError", err)
		}
	})
}

// TestAnthropicStoppedSolution: of three solutions (three requests, as the
// API has no n), one refused. It is no solution: the request asks again
// for it alone, and returns three solutions when the API then answers
// it, or the two others when it refuses again, rather than failing. When
// every solution is refused, the request fails with the *StopError.
func TestAnthropicStoppedSolution(t *testing.T) {
	out := json.RawMessage(`{"type":"integer"}`)
	for _, stream := range []bool{false, true} {
		for _, tt := range []struct {
			name     string
			refused  func(k int32) bool // whether the k-th request is refused
			want     string             // the outputs, sorted, or the error
			wantSent int32
		}{
			{"refused, then answered", func(k int32) bool { return k == 2 }, "[1 3 4]", 4},
			{"refused twice", func(k int32) bool { return k == 2 || k == 4 }, "[1 3]", 4},
			{"every solution refused", func(int32) bool { return true }, "*anthropic.StopError", 3},
		} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				var sent atomic.Int32
				resp, err := stoppedRequest(t, func(w http.ResponseWriter, r *http.Request) {
					k := sent.Add(1)
					text, reason := fmt.Sprintf(`{\"output\":%d}`, k), "end_turn"
					if tt.refused(k) {
						text, reason = `{\"output\":`, "refusal"
					}
					writeAnthropic(w, stream, text, reason)
				}, newAnthropic, agent.Config{N: 3, Stream: stream}, out)
				var got string
				switch se, ok := errors.AsType[*anthropic.StopError](err); {
				case ok && len(se.Solutions()) == 3:
					got = "*anthropic.StopError"
				case err != nil:
					got = err.Error()
				default:
					got = fmt.Sprint(slices.Sorted(slices.Values(solutionOutputs(resp))))
				}
				if got != tt.want {
					t.Errorf("got %s, want %s", got, tt.want)
				}
				if got := sent.Load(); got != tt.wantSent {
					t.Errorf("%d requests, want %d", got, tt.wantSent)
				}
			})
		}
	}
}

// newAnthropic makes an Anthropic provider for a test server at url.
func newAnthropic(url string) (provider.Provider, error) {
	return anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: url, Model: "claude-test"})
}

// writeAnthropic answers text, already escaped for a JSON string, stopped
// for reason, whole or streamed.
func writeAnthropic(w http.ResponseWriter, stream bool, text, reason string) {
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"%s"}],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":5}}`, text, reason)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
	fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}}\n\n", text)
	fmt.Fprint(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	fmt.Fprintf(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":%q,\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n", reason)
	fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
}

// TestAnthropicToolCut: in tool mode (anthropic.Config.ToolOutput), an
// answer stopped at max_tokens is cut whether it is streamed, its input
// the partial_json that arrived (none at all: the {} of
// content_block_start), or whole, its input what the API parsed of it,
// which may be empty or pass the schema all the same (the API sends only
// the parameters the model finished). Each is re-asked as cut and ends
// with ErrAnswerCut, never taken for a whole answer.
func TestAnthropicToolCut(t *testing.T) {
	out := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"more":{"type":"string"}},"required":["n"]}`)
	for _, tt := range []struct {
		name    string
		stream  bool
		input   string // the tool's input: its partial_json when streamed
		wantRaw string
	}{
		{"whole, partial input", false, `{"output":{"n":12}}`, `{"output":{"n":12}`},
		{"whole, empty input", false, `{}`, `{`},
		{"streamed", true, `{"output":{"n":12},"more":"ab`, `{"output":{"n":12},"more":"ab`},
		// Cut before any partial_json: what is left is the {} of
		// content_block_start, without its brace.
		{"streamed, empty input", true, ``, `{`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var sent atomic.Int32
			var repairPrompt string
			_, err := stoppedRequest(t, func(w http.ResponseWriter, r *http.Request) {
				if sent.Add(1) == 2 {
					var body struct {
						Messages []struct {
							Content []struct{ Text string } `json:"content"`
						} `json:"messages"`
					}
					_ = json.NewDecoder(r.Body).Decode(&body)
					if m := body.Messages; len(m) > 0 && len(m[len(m)-1].Content) > 0 {
						repairPrompt = m[len(m)-1].Content[0].Text
					}
				}
				writeAnthropicTool(w, tt.stream, tt.input, "max_tokens")
			}, func(url string) (provider.Provider, error) {
				return anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: url, Model: "claude-test", ToolOutput: true})
			}, agent.Config{MaxRepairs: 1, Stream: tt.stream}, out)
			inv, ok := errors.AsType[*agent.InvalidError](err)
			if !ok || !errors.Is(err, agent.ErrAnswerCut) || inv.Raw != tt.wantRaw {
				t.Fatalf("got %v, want an InvalidError wrapping ErrAnswerCut with Raw %s", err, tt.wantRaw)
			}
			if got := sent.Load(); got != 2 {
				t.Errorf("%d requests, want 2", got)
			}
			if !strings.Contains(repairPrompt, "reached the output token limit") {
				t.Errorf("repair prompt %q, want it to say the answer was cut", repairPrompt)
			}
		})
	}
}

// writeAnthropicTool answers with the forced tool "solution", its input
// given as JSON, stopped for reason: whole, the input as the API parsed
// it, or streamed, the input the partial_json of one delta (empty, as
// the API sends before the first piece, when input is).
func writeAnthropicTool(w http.ResponseWriter, stream bool, input, reason string) {
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"tool_use","id":"toolu_1","name":"solution","input":%s}],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":5}}`, input, reason)
		return
	}
	partial, _ := json.Marshal(input)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
	fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"solution\",\"input\":{}}}\n\n")
	fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":%s}}\n\n", partial)
	fmt.Fprint(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	fmt.Fprintf(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":%q,\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n", reason)
	fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
}
