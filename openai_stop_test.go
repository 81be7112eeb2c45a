package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
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
