package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent/provider"
)

// oneCandidateServer is a Gemini API that answers a request with
// refuse's 400 body when it gives one (see refusing), and otherwise one
// candidate per candidateCount, whole or streamed. It records the
// candidateCount of each request, by model.
type oneCandidateServer struct {
	mu   sync.Mutex
	sent map[string][]int
}

// refusing refuses candidateCount above 1 for models as Gemini 3 models
// do (testdata/error_400_candidates.json).
func refusing(t *testing.T, models ...string) func(model string, n int) []byte {
	t.Helper()
	refusal, err := os.ReadFile(filepath.Join("testdata", "error_400_candidates.json"))
	if err != nil {
		t.Fatal(err)
	}
	return func(model string, n int) []byte {
		if n > 1 && slices.Contains(models, model) {
			return refusal
		}
		return nil
	}
}

func newOneCandidateServer(t *testing.T, refuse func(model string, n int) []byte) (*oneCandidateServer, *Provider) {
	t.Helper()
	s := &oneCandidateServer{sent: map[string][]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		model, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
		var body wireRequest
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := body.config(t).CandidateCount
		s.mu.Lock()
		s.sent[model] = append(s.sent[model], n)
		s.mu.Unlock()
		if refusal := refuse(model, n); refusal != nil {
			w.Header().Set("Content-Type", "application/json; charset=UTF-8")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(refusal)
			return
		}
		var answer wireResponse
		for i := range max(n, 1) {
			answer.Candidates = append(answer.Candidates, wireCandidate{Content: wireContent{Role: "model",
				Parts: []wirePart{{Text: fmt.Sprintf(`{"output":%d}`, i)}}}, FinishReason: "STOP", Index: i})
		}
		answer.UsageMetadata = &wireUsage{PromptTokenCount: 3, CandidatesTokenCount: 2, TotalTokenCount: 5}
		if method == "streamGenerateContent" {
			w.Header().Set("Content-Type", "text/event-stream")
			writeEvent(w, answer)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	p, err := New(Config{APIKey: testKey, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

func (s *oneCandidateServer) counts(model string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent[model])
}

// TestRefusedCandidateCount: a model that refuses candidateCount above 1
// is asked again at once without it, and answers one candidate, with no
// error (the Request asks again for the rest); later requests for that
// model send none, while another model still gets its candidateCount.
func TestRefusedCandidateCount(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			s, p := newOneCandidateServer(t, refusing(t, "gemini-3-pro-preview"))
			ask := func(model string, n int) int {
				t.Helper()
				r, err := provider.Collect(p.Generate(context.Background(), &provider.Request{Model: model, N: n, Stream: stream}))
				if err != nil {
					t.Fatalf("%s N=%d: %v", model, n, err)
				}
				return len(r.Texts)
			}
			if got := ask("gemini-3-pro-preview", 3); got != 1 {
				t.Errorf("first request: %d candidates, want 1", got)
			}
			if got := ask("gemini-3-pro-preview", 2); got != 1 {
				t.Errorf("second request: %d candidates, want 1", got)
			}
			if got := ask("gemini-2.5-flash", 3); got != 3 {
				t.Errorf("another model: %d candidates, want 3", got)
			}
			// 0 is no candidateCount in the body: one candidate.
			if got, want := s.counts("gemini-3-pro-preview"), []int{3, 0, 0}; !slices.Equal(got, want) {
				t.Errorf("candidateCount of each request %v, want %v", got, want)
			}
			if got, want := s.counts("gemini-2.5-flash"), []int{3}; !slices.Equal(got, want) {
				t.Errorf("candidateCount for the other model %v, want %v", got, want)
			}
		})
	}
}

// TestOtherBadRequestNotRetried: a 400 that is not about candidates, or a
// refusal when no candidateCount above 1 was sent, is the error, after a
// single request.
func TestOtherBadRequestNotRetried(t *testing.T) {
	for _, tt := range []struct {
		name, file string
		n          int
	}{
		{"a schema too complex, N 3", "error_400_schema.json", 3},
		{"the candidates refusal, N 1", "error_400_candidates.json", 1},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				body, err := os.ReadFile(filepath.Join("testdata", tt.file))
				if err != nil {
					t.Fatal(err)
				}
				var requests int
				var mu sync.Mutex
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					requests++
					mu.Unlock()
					w.Header().Set("Content-Type", "application/json; charset=UTF-8")
					w.WriteHeader(http.StatusBadRequest)
					w.Write(body)
				}))
				defer srv.Close()
				p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel})
				if err != nil {
					t.Fatal(err)
				}
				_, err = provider.Collect(p.Generate(context.Background(), &provider.Request{N: tt.n, Stream: stream}))
				if pe, ok := errors.AsType[*provider.Error](err); !ok || pe.Status != http.StatusBadRequest {
					t.Errorf("got %v, want the API's 400", err)
				}
				if requests != 1 {
					t.Errorf("%d requests, want 1", requests)
				}
			})
		}
	}
}

// TestCandidateRangeNotRemembered: a 400 about candidates other than the
// models' refusal of several (a count above the model's maximum) is sent
// again for one candidate, but the next request still asks for several.
func TestCandidateRangeNotRemembered(t *testing.T) {
	s, p := newOneCandidateServer(t, func(_ string, n int) []byte {
		if n > 8 {
			return []byte(`{"error":{"code":400,"message":"* GenerateContentRequest.generation_config.candidate_count: must be between 1 and 8.\n","status":"INVALID_ARGUMENT"}}`)
		}
		return nil
	})
	for _, n := range []int{10, 3} {
		if _, err := provider.Collect(p.Generate(context.Background(), &provider.Request{Model: "gemini-2.5-flash", N: n})); err != nil {
			t.Fatalf("N=%d: %v", n, err)
		}
	}
	if got, want := s.counts("gemini-2.5-flash"), []int{10, 0, 3}; !slices.Equal(got, want) {
		t.Errorf("candidateCount of each request %v, want %v", got, want)
	}
}
