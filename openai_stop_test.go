package agent_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/openai"
)

// TestOpenAIStoppedAnswers runs requests against Chat Completions answers
// stopped short, whole and streamed: one cut by the token limit is
// re-asked as cut and ends with ErrAnswerCut; one a content filter stopped
// ends the request with the adapter's *openai.FilterError after one
// request, without a repair that the filter would stop again.
func TestOpenAIStoppedAnswers(t *testing.T) {
	testStoppedAnswers(t, []stoppedAnswer{
		{"length", true, 2},
		{"content_filter", false, 1},
	}, func(w http.ResponseWriter, stream bool, reason string) {
		writeChoices(w, stream, []choice{{Content: `{"output":{"n":12`, Finish: reason}})
	}, newOpenAI, func(t *testing.T, err error, _ string) {
		if _, ok := errors.AsType[*openai.FilterError](err); !ok {
			t.Errorf("got %v, want a *openai.FilterError", err)
		}
	})
}

// TestOpenAIStoppedSolution: of three choices, the second refused or
// filtered. It is no solution: the request asks again for it alone, and
// returns three solutions when the server then answers it, or the two
// good ones when it stops it again, rather than failing. When every
// choice stopped, the request fails with the adapter's error.
func TestOpenAIStoppedSolution(t *testing.T) {
	out := json.RawMessage(`{"type":"integer"}`)
	for _, stream := range []bool{false, true} {
		for _, tt := range []struct {
			name  string
			again bool   // the choice asked again is answered
			all   bool   // every choice stops
			want  string // the outputs, or the error
		}{
			{"refused, then answered", true, false, "[1 4 3]"},
			{"refused twice", false, false, "[1 3]"},
			{"filtered, then answered", true, false, "[1 4 3]"},
			{"filtered twice", false, false, "[1 3]"},
			{"every choice refused", false, true, "*openai.RefusalError"},
			{"every choice filtered", false, true, "*openai.FilterError"},
		} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				refuse := strings.Contains(tt.name, "refused")
				var sent []int
				resp, err := stoppedRequest(t, func(w http.ResponseWriter, r *http.Request) {
					var body struct{ N int }
					if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
					sent = append(sent, max(body.N, 1))
					var choices []choice
					for i := range max(body.N, 1) {
						n := len(sent)*3 - 2 + i // 1, 2, 3, then 4
						stop := tt.all || len(sent) == 1 && i == 1 || len(sent) > 1 && !tt.again
						c := choice{Index: i, Content: fmt.Sprintf(`{"output":%d}`, n), Finish: "stop"}
						switch {
						case stop && refuse:
							c.Content, c.Refusal = "", "I can't help with that."
						case stop:
							c.Content, c.Finish = "{", "content_filter"
						}
						choices = append(choices, c)
					}
					writeChoices(w, stream, choices)
				}, newOpenAI, agent.Config{N: 3, Stream: stream}, out)
				var got string
				if err != nil {
					if se, ok := errors.AsType[provider.SolutionError](err); ok {
						got = fmt.Sprintf("%T", se)
					} else {
						got = err.Error()
					}
				} else {
					got = fmt.Sprint(solutionOutputs(resp))
				}
				if got != tt.want {
					t.Errorf("got %s, want %s", got, tt.want)
				}
				wantSent := []int{3, 1}
				if tt.all {
					wantSent = []int{3}
				}
				if d := cmp.Diff(wantSent, sent); d != "" {
					t.Errorf("n of each request (-want +got):\n%s", d)
				}
			})
		}
	}
}

// newOpenAI makes a Chat Completions provider for a test server at url.
func newOpenAI(url string) (provider.Provider, error) {
	return openai.New(openai.Config{APIKey: "test-key", BaseURL: url, Model: "gpt-test"})
}

// choice is one choice of a Chat Completions answer.
type choice struct {
	Index            int
	Content, Refusal string // none when empty
	Finish           string
}

// writeChoices answers choices, whole or streamed.
func writeChoices(w http.ResponseWriter, stream bool, cs []choice) {
	str := func(s string) string {
		if s == "" {
			return "null"
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	if !stream {
		var parts []string
		for _, c := range cs {
			parts = append(parts, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":%s,"refusal":%s},"finish_reason":%q}`, c.Index, str(c.Content), str(c.Refusal), c.Finish))
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[%s],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`, strings.Join(parts, ","))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(choice string) {
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-test\",\"choices\":[%s]}\n\n", choice)
	}
	for _, c := range cs {
		delta := fmt.Sprintf(`{"content":%s}`, str(c.Content))
		if c.Refusal != "" {
			delta = fmt.Sprintf(`{"refusal":%s}`, str(c.Refusal))
		}
		event(fmt.Sprintf(`{"index":%d,"delta":%s,"finish_reason":null}`, c.Index, delta))
	}
	for _, c := range cs {
		event(fmt.Sprintf(`{"index":%d,"delta":{},"finish_reason":%q}`, c.Index, c.Finish))
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}
