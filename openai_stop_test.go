package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/openai"
)

// TestOpenAIStoppedAnswers runs requests against Chat Completions answers
// stopped short, whole and streamed: one cut by the token limit is
// re-asked as cut and ends with ErrAnswerCut; one a content filter stopped
// ends the request with the adapter's *openai.FilterError after one
// request, without a repair that the filter would stop again.
func TestOpenAIStoppedAnswers(t *testing.T) {
	out := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	for _, stream := range []bool{false, true} {
		for _, tt := range []struct {
			reason   string
			wantCut  bool
			wantSent int32
		}{
			{"length", true, 2},
			{"content_filter", false, 1},
		} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.reason, stream), func(t *testing.T) {
				var sent atomic.Int32
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					sent.Add(1)
					text := `{\"output\":{\"n\":12`
					if !stream {
						w.Header().Set("Content-Type", "application/json")
						fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"%s","refusal":null},"finish_reason":%q}],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`, text, tt.reason)
						return
					}
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-test\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"%s\"},\"finish_reason\":null}]}\n\n", text)
					fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-test\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", tt.reason)
					fmt.Fprint(w, "data: [DONE]\n\n")
				}))
				defer srv.Close()
				p, err := openai.New(openai.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gpt-test"})
				if err != nil {
					t.Fatal(err)
				}
				_, err = agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxRepairs: 1, Stream: stream},
					out, []message.Message{message.Text("count")})
				if tt.wantCut {
					if inv, ok := errors.AsType[*agent.InvalidError](err); !ok || !errors.Is(err, agent.ErrAnswerCut) || inv.Raw != `{"output":{"n":12` {
						t.Errorf("got %v, want an InvalidError wrapping ErrAnswerCut", err)
					}
				} else if _, ok := errors.AsType[*openai.FilterError](err); !ok {
					t.Errorf("got %v, want a *openai.FilterError", err)
				}
				if got := sent.Load(); got != tt.wantSent {
					t.Errorf("%d requests, want %d", got, tt.wantSent)
				}
			})
		}
	}
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
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
				}))
				defer srv.Close()
				p, err := openai.New(openai.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gpt-test"})
				if err != nil {
					t.Fatal(err)
				}
				resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), N: 3, Stream: stream},
					out, []message.Message{message.Text("count")})
				var got string
				if err != nil {
					if _, ok := errors.AsType[provider.SolutionError](err); ok {
						got = fmt.Sprintf("%T", errors.Unwrap(err))
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

// solutionOutputs returns the output of each solution of resp.
func solutionOutputs(resp *agent.Response) []string {
	var out []string
	for _, s := range resp.Solutions {
		out = append(out, string(s.Output))
	}
	return out
}
