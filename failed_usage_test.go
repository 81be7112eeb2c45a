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
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
)

// anthropicStart is the start of an Anthropic stream that counted 9 input
// tokens and 1 output token, and text the first piece of its answer,
// escaped for a JSON string.
func anthropicStart(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
	fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}}\n\n", text)
}

// TestFailedRequestUsage: a Request whose stream is cut after the
// provider counted tokens fails with them (a *UsageError, UsageOf), and
// one retried after an error event inside the stream counts both
// attempts in Response.Usage.
func TestFailedRequestUsage(t *testing.T) {
	out := json.RawMessage(`{"type":"string"}`)
	t.Run("cut", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			anthropicStart(w, `{\"calls\":[],\"output\":\"x`) // and the stream ends
		}))
		defer srv.Close()
		p, err := newAnthropic(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, err = agent.Request(t.Context(), agent.Config{Provider: p, Stream: true}, out, []message.Message{message.Text("hi")})
		if !errors.Is(err, provider.ErrTruncated) {
			t.Fatalf("error %v, want a cut", err)
		}
		if _, ok := errors.AsType[*agent.UsageError](err); !ok {
			t.Errorf("error %T, want an *agent.UsageError", err)
		}
		if diff := cmp.Diff(agent.UsageOf(err), provider.Usage{Input: 9, Output: 1}); diff != "" {
			t.Errorf("usage (-got +want):\n%s", diff)
		}
	})
	t.Run("retried", func(t *testing.T) {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
				fmt.Fprint(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
				return
			}
			writeAnthropic(w, true, `{\"output\":\"ok\"}`, "end_turn")
		}))
		defer srv.Close()
		p, err := newAnthropic(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		p = provider.Retry(p, provider.RetryConfig{Sleep: func(context.Context, time.Duration) error { return nil }})
		resp, err := agent.Request(t.Context(), agent.Config{Provider: p, Stream: true}, out, []message.Message{message.Text("hi")})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(resp.Usage, provider.Usage{Input: 18, Output: 6}); diff != "" {
			t.Errorf("usage (-got +want):\n%s", diff)
		}
	})
}

// TestFailedStepUsage: a run whose step's stream is cut counts what the
// provider said it used: an EventUsage before the failure, journaled, so
// that a resume's token budget sees it.
func TestFailedStepUsage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		anthropicStart(w, `{\"calls\":[],\"output\":\"x`) // and the stream ends
	}))
	defer srv.Close()
	p, err := newAnthropic(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	cfg := agent.Config{Provider: p, Store: st, RunID: "cut"}
	var used provider.Usage
	var runErr error
	for ev, err := range agent.Events(t.Context(), cfg, json.RawMessage(`{"type":"string"}`), []message.Message{message.Text("hi")}) {
		if err != nil {
			runErr = err
			break
		}
		if ev.Kind == agent.EventUsage {
			used.Add(*ev.Usage)
		}
	}
	if !errors.Is(runErr, provider.ErrTruncated) {
		t.Fatalf("run ended with %v, want a cut", runErr)
	}
	want := provider.Usage{Input: 9, Output: 1}
	if diff := cmp.Diff(used, want); diff != "" {
		t.Errorf("usage events (-got +want):\n%s", diff)
	}
	var journaled store.UsageTotal
	for e, err := range st.Entries(t.Context(), "cut", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == store.EntryUsage {
			if err := journaled.Add(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	run, err := st.Load(t.Context(), "cut")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(journaled.Of(run), want); diff != "" {
		t.Errorf("journaled usage (-got +want):\n%s", diff)
	}
}

// TestFailedStepBudget: the tokens of a failed step count towards the
// token budget of the run that goes on: a resume with a budget they
// reach stops before asking the model again.
func TestFailedStepBudget(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		anthropicStart(w, `{\"calls\":[],\"output\":\"x`) // and the stream ends
	}))
	defer srv.Close()
	p, err := newAnthropic(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	out := json.RawMessage(`{"type":"string"}`)
	if _, err := agent.Run(t.Context(), agent.Config{Provider: p, Store: st, RunID: "b"}, out, []message.Message{message.Text("hi")}); !errors.Is(err, provider.ErrTruncated) {
		t.Fatalf("run ended with %v, want a cut", err)
	}
	_, err = agent.Resume(t.Context(), agent.Config{Provider: p, Store: st, TokenBudget: 10}, "b")
	if !errors.Is(err, agent.ErrTokenBudget) || calls.Load() != 1 {
		t.Errorf("resume ended with %v after %d requests; want the budget after 1", err, calls.Load())
	}
}
