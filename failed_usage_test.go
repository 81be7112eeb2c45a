package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/anthropic"
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
// reach stops before asking the model again. Anthropic says them in
// message_start (9 + 1), Gemini in the usageMetadata of its events.
func TestFailedStepBudget(t *testing.T) {
	for _, tt := range []struct {
		name        string
		newProvider func(url string) (provider.Provider, error)
		cut         func(w http.ResponseWriter) // a stream that ends early
	}{
		{"anthropic", newAnthropic, func(w http.ResponseWriter) { anthropicStart(w, `{\"calls\":[],\"output\":\"x`) }},
		{"gemini", newGemini, func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"candidates":[{"content":{"parts":[{"text":"{\"output\":\"x"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":2,"totalTokenCount":10},"modelVersion":"gemini-test"}`+"\r\n\r\n")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				tt.cut(w)
			}))
			defer srv.Close()
			p, err := tt.newProvider(srv.URL)
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
		})
	}
}

// seqTransport numbers the requests it sends (X-Seq, from 1) and closes
// began[seq] once the adapter handled the first event of that response
// and reads on, and eof[seq] once it read the body to its end.
type seqTransport struct {
	base       http.RoundTripper
	n          atomic.Int32
	began, eof []chan struct{}
}

func (t *seqTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	seq := int(t.n.Add(1))
	r = r.Clone(r.Context())
	r.Header.Set("X-Seq", strconv.Itoa(seq))
	res, err := t.base.RoundTrip(r)
	if err != nil || seq >= len(t.began) {
		return res, err
	}
	res.Body = &seqBody{ReadCloser: res.Body, began: sync.OnceFunc(func() { close(t.began[seq]) }), eof: sync.OnceFunc(func() { close(t.eof[seq]) })}
	return res, nil
}

type seqBody struct {
	io.ReadCloser
	seen       []byte
	began, eof func()
}

func (b *seqBody) Read(p []byte) (int, error) {
	// The decoder reads again only once it used what it had: with a
	// whole event among it, the adapter handled that event.
	if bytes.Contains(b.seen, []byte("\n\n")) {
		b.began()
	}
	n, err := b.ReadCloser.Read(p)
	b.seen = append(b.seen, p[:n]...)
	if err != nil {
		b.eof()
	}
	return n, err
}

// TestAnthropicCutSolutionKeepsOthers: of three solutions (three requests
// on Anthropic), the one whose stream is cut does not cancel the two
// streaming: they arrive whole and stand, and only the cut one is asked
// again, so no answer is paid twice. Response.Usage counts every request,
// the cut one's input included.
func TestAnthropicCutSolutionKeepsOthers(t *testing.T) {
	chans := func() []chan struct{} {
		return []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})}
	}
	tr := &seqTransport{began: chans(), eof: chans()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seq, _ := strconv.Atoi(r.Header.Get("X-Seq"))
		switch seq {
		case 1:
			anthropicStart(w, `{\"output\":\"ze`)
			w.(http.Flusher).Flush()
			<-tr.began[2]
			<-tr.began[3]
			return // cut
		case 2, 3:
			anthropicStart(w, `{\"output\":`)
			w.(http.Flusher).Flush()
			select {
			case <-tr.eof[1]:
			case <-r.Context().Done():
				t.Errorf("request %d was cancelled", seq)
				return
			}
			anthropicEnd(w, fmt.Sprintf(`\"answer %d\"}`, seq))
		default:
			writeAnthropic(w, true, `{\"output\":\"again\"}`, "end_turn")
		}
	}))
	defer srv.Close()
	hc := srv.Client()
	tr.base = hc.Transport
	hc.Transport = tr
	p, err := anthropic.New(anthropic.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "claude-test", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{Provider: p, N: 3, Stream: true, Logger: slog.New(slog.DiscardHandler)}
	resp, err := agent.Request(t.Context(), cfg, json.RawMessage(`{"type":"string"}`), []message.Message{message.Text("hi")})
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, s := range resp.Solutions {
		outs = append(outs, string(s.Output))
	}
	slices.Sort(outs)
	if diff := cmp.Diff(outs, []string{`"again"`, `"answer 2"`, `"answer 3"`}); diff != "" {
		t.Errorf("outputs (-got +want):\n%s", diff)
	}
	if n := tr.n.Load(); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
	if diff := cmp.Diff(resp.Usage, provider.Usage{Input: 36, Output: 16}); diff != "" {
		t.Errorf("usage (-got +want):\n%s", diff)
	}
}

// anthropicEnd ends a stream anthropicStart began with text, escaped for
// a JSON string.
func anthropicEnd(w http.ResponseWriter, text string) {
	fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"}}\n\n", text)
	fmt.Fprint(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n")
	fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
}
