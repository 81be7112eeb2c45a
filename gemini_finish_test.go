package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/gemini"
)

// TestGeminiStoppedAnswers runs requests against Gemini answers the API
// stopped short, whole and streamed: one cut by MAX_TOKENS is re-asked as
// cut and ends with ErrAnswerCut; one a safety filter stopped ends the
// request with the adapter's *gemini.FinishError, without a repair that the
// filter would stop again.
func TestGeminiStoppedAnswers(t *testing.T) {
	testStoppedAnswers(t, []stoppedAnswer{
		{"MAX_TOKENS", true, 2},
		{"SAFETY", false, 1},
	}, func(w http.ResponseWriter, stream bool, reason string) {
		writeGemini(w, stream, fmt.Sprintf(`{"candidates":[{"content":{"parts":[{"text":"{\"output\":{\"n\":12"}],"role":"model"},"finishReason":%q,"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":5,"totalTokenCount":14}}`, reason))
	}, newGemini, func(t *testing.T, err error, reason string) {
		if fe, ok := errors.AsType[*gemini.FinishError](err); !ok || fe.Reason != reason {
			t.Errorf("got %v, want a *gemini.FinishError", err)
		}
	})
}

// TestGeminiSingleCandidate: Gemini 3 models refuse candidateCount above 1.
// With SingleCandidate the adapter never sends it; without, the refused
// request is sent again at once without it, and later ones go without. In
// both, the Request asks once for each solution.
func TestGeminiSingleCandidate(t *testing.T) {
	var sent, refused atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			GenerationConfig struct {
				CandidateCount int `json:"candidateCount"`
			} `json:"generationConfig"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.GenerationConfig.CandidateCount > 1 {
			refused.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"code":400,"message":"Multiple candidates is not enabled for this model","status":"INVALID_ARGUMENT"}}`)
			return
		}
		n := sent.Add(1)
		fmt.Fprintf(w, `{"candidates":[{"content":{"parts":[{"text":"{\"output\":%d}"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":5,"totalTokenCount":14}}`, n)
	}))
	defer srv.Close()
	msgs := []message.Message{message.Text("Pick a number.")}
	for _, single := range []bool{false, true} {
		p, err := gemini.New(gemini.Config{APIKey: "k", BaseURL: srv.URL, Model: "gemini-3-pro", SingleCandidate: single})
		if err != nil {
			t.Fatal(err)
		}
		for run := range 2 {
			sent.Store(0)
			refused.Store(0)
			res, err := agent.Request(context.Background(), agent.Config{Provider: p, N: 3}, json.RawMessage(`{"type":"integer"}`), msgs)
			if err != nil {
				t.Fatalf("SingleCandidate %v, run %d: %v", single, run, err)
			}
			var got []string
			for _, s := range res.Solutions {
				got = append(got, string(s.Output))
			}
			// Only the first request without SingleCandidate is refused.
			wantRefused := int32(0)
			if !single && run == 0 {
				wantRefused = 1
			}
			if want := []string{"1", "2", "3"}; !slices.Equal(got, want) || sent.Load() != 3 || refused.Load() != wantRefused {
				t.Errorf("SingleCandidate %v, run %d: solutions %v after %d requests and %d refused, want %v after 3 and %d",
					single, run, got, sent.Load(), refused.Load(), want, wantRefused)
			}
		}
	}
}

// TestGeminiStoppedSolution: of three candidates, the second stopped by
// the safety filter. It is no solution: the request asks again for it
// alone, and returns three solutions when the API then answers it, or the
// two others when it stops it again, rather than failing. When every
// candidate stopped, the request fails with the *FinishError.
func TestGeminiStoppedSolution(t *testing.T) {
	out := json.RawMessage(`{"type":"integer"}`)
	for _, stream := range []bool{false, true} {
		for _, tt := range []struct {
			name  string
			again bool   // the candidate asked again is answered
			all   bool   // every candidate stops
			want  string // the outputs, or the error
		}{
			{"stopped, then answered", true, false, "[1 4 3]"},
			{"stopped twice", false, false, "[1 3]"},
			{"every candidate stopped", false, true, "*gemini.FinishError"},
		} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				var sent []int
				resp, err := stoppedRequest(t, func(w http.ResponseWriter, r *http.Request) {
					var body struct {
						GenerationConfig struct {
							CandidateCount int `json:"candidateCount"`
						} `json:"generationConfig"`
					}
					if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
					count := max(body.GenerationConfig.CandidateCount, 1)
					sent = append(sent, count)
					var cands []string
					for i := range count {
						n := len(sent)*3 - 2 + i // 1, 2, 3, then 4
						text, reason := fmt.Sprintf(`{\"output\":%d}`, n), "STOP"
						if tt.all || len(sent) == 1 && i == 1 || len(sent) > 1 && !tt.again {
							text, reason = `{`, "SAFETY"
						}
						cands = append(cands, fmt.Sprintf(`{"content":{"parts":[{"text":"%s"}],"role":"model"},"finishReason":%q,"index":%d}`, text, reason, i))
					}
					writeGemini(w, stream, `{"candidates":[`+strings.Join(cands, ",")+`],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":5,"totalTokenCount":14}}`)
				}, newGemini, agent.Config{N: 3, Stream: stream}, out)
				var got string
				switch fe, ok := errors.AsType[*gemini.FinishError](err); {
				case ok && len(fe.Solutions()) == 3:
					got = "*gemini.FinishError"
				case err != nil:
					got = err.Error()
				default:
					got = fmt.Sprint(solutionOutputs(resp))
				}
				if got != tt.want {
					t.Errorf("got %s, want %s", got, tt.want)
				}
				wantSent := []int{3, 1}
				if tt.all {
					wantSent = []int{3}
				}
				if !slices.Equal(sent, wantSent) {
					t.Errorf("candidateCount of each request %v, want %v", sent, wantSent)
				}
			})
		}
	}
}

// newGemini makes a Gemini provider for a test server at url.
func newGemini(url string) (provider.Provider, error) {
	return gemini.New(gemini.Config{APIKey: "test-key", BaseURL: url, Model: "gemini-test"})
}

// writeGemini answers body, whole or streamed as one event.
func writeGemini(w http.ResponseWriter, stream bool, body string) {
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: "+body+"\r\n\r\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, body)
}
