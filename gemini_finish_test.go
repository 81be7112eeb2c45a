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
	"github.com/augceo/agent/provider/gemini"
)

// TestGeminiStoppedAnswers runs requests against Gemini answers the API
// stopped short, whole and streamed: one cut by MAX_TOKENS is re-asked as
// cut and ends with ErrAnswerCut; one a safety filter stopped ends the
// request with the adapter's *gemini.FinishError, without a repair that the
// filter would stop again.
func TestGeminiStoppedAnswers(t *testing.T) {
	out := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	for _, stream := range []bool{false, true} {
		for _, tt := range []struct {
			reason   string
			wantCut  bool
			wantSent int32
		}{
			{"MAX_TOKENS", true, 2},
			{"SAFETY", false, 1},
		} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.reason, stream), func(t *testing.T) {
				var sent atomic.Int32
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					sent.Add(1)
					body := fmt.Sprintf(`{"candidates":[{"content":{"parts":[{"text":"{\"output\":{\"n\":12"}],"role":"model"},"finishReason":%q,"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":5,"totalTokenCount":14}}`, tt.reason)
					if stream {
						w.Header().Set("Content-Type", "text/event-stream")
						fmt.Fprint(w, "data: "+body+"\r\n\r\n")
						return
					}
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, body)
				}))
				defer srv.Close()
				p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-test"})
				if err != nil {
					t.Fatal(err)
				}
				_, err = agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxRepairs: 1, Stream: stream},
					out, []message.Message{message.Text("count")})
				if tt.wantCut {
					if inv, ok := errors.AsType[*agent.InvalidError](err); !ok || !errors.Is(err, agent.ErrAnswerCut) || inv.Raw != `{"output":{"n":12` {
						t.Errorf("got %v, want an InvalidError wrapping ErrAnswerCut", err)
					}
				} else if fe, ok := errors.AsType[*gemini.FinishError](err); !ok || fe.Reason != tt.reason {
					t.Errorf("got %v, want a *gemini.FinishError", err)
				}
				if got := sent.Load(); got != tt.wantSent {
					t.Errorf("%d requests, want %d", got, tt.wantSent)
				}
			})
		}
	}
}
