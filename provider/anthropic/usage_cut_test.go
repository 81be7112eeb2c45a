package anthropic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// Events of the Messages API's stream, as the server sends them.
func startEvent(input, output int) string {
	return "event: message_start\n" +
		fmt.Sprintf(`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":%d}}}`, input, output) + "\n\n" +
		"event: content_block_start\n" +
		`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n"
}

func deltaEvent(text string) string {
	return "event: content_block_delta\n" +
		fmt.Sprintf(`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, text) + "\n\n"
}

func endEvents(output int) string {
	return "event: content_block_stop\n" +
		`data: {"type":"content_block_stop","index":0}` + "\n\n" +
		"event: message_delta\n" +
		fmt.Sprintf(`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, output) + "\n\n" +
		"event: message_stop\n" +
		`data: {"type":"message_stop"}` + "\n\n"
}

const overloadedEvent = "event: error\n" +
	`data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` + "\n\n"

func writeSSE(w http.ResponseWriter, s string) {
	io.WriteString(w, s)
	w.(http.Flusher).Flush()
}

// TestFailedStreamUsage: a stream that fails after message_start still
// says the tokens it counted (the input, and the output so far), before
// its error, so that what a failed call is billed is counted; Retry passes
// that usage on and retries an error event all the same.
func TestFailedStreamUsage(t *testing.T) {
	for _, tt := range []struct {
		name      string
		bodies    []string // the answer of each request
		wantText  string
		wantUsage provider.Usage
		wantErr   error // nil: none
	}{
		{"cut", []string{startEvent(30, 1) + deltaEvent(`{"out`)}, `{"out`, provider.Usage{Input: 30, Output: 1}, provider.ErrTruncated},
		{"cut after message_delta", []string{startEvent(30, 1) + deltaEvent(`{"out`) +
			"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":null},"usage":{"output_tokens":9}}` + "\n\n"},
			`{"out`, provider.Usage{Input: 30, Output: 9}, provider.ErrTruncated},
		{"cut before any event", []string{""}, "", provider.Usage{}, provider.ErrTruncated},
		{"error event, retried", []string{startEvent(30, 1) + overloadedEvent, startEvent(30, 1) + deltaEvent(`{"output":null}`) + endEvents(5)},
			`{"output":null}`, provider.Usage{Input: 60, Output: 6}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			var mu sync.Mutex
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				body := tt.bodies[min(calls, len(tt.bodies)-1)]
				calls++
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				writeSSE(w, body)
			})
			p, _ := newTestServer(t, h, Config{})
			r := provider.Retry(p, provider.RetryConfig{Sleep: func(context.Context, time.Duration) error { return nil }})
			res, err := provider.Collect(r.Generate(t.Context(), request(true, 1)))
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if got := strings.Join(res.Texts, ""); got != tt.wantText {
				t.Errorf("text %q, want %q", got, tt.wantText)
			}
			if diff := cmp.Diff(res.Usage, tt.wantUsage); diff != "" {
				t.Errorf("usage (-got +want):\n%s", diff)
			}
		})
	}
}

// beganTransport closes began[i] once the adapter read the first event of
// solution i's response and asks for more: the response began, as the
// adapter sees it.
// watchedProvider returns a provider whose requests h answers, each
// closing began[its index] once its response began.
func watchedProvider(t *testing.T, h http.Handler, began []chan struct{}) *Provider {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	hc := srv.Client()
	hc.Transport = indexTransport{beganTransport{hc.Transport, began}}
	p, err := New(Config{APIKey: testKey, BaseURL: srv.URL, Model: testModel, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type beganTransport struct {
	base  http.RoundTripper
	began []chan struct{}
}

func (t beganTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil {
		return res, err
	}
	i, _ := strconv.Atoi(r.Header.Get(indexHeader))
	res.Body = &watchedBody{ReadCloser: res.Body, began: sync.OnceFunc(func() { close(t.began[i]) })}
	return res, nil
}

type watchedBody struct {
	io.ReadCloser
	seen  []byte
	began func()
}

func (b *watchedBody) Read(p []byte) (int, error) {
	// The decoder reads again only once it used what it had: with a
	// whole event among it, the adapter handled that event.
	if bytes.Contains(b.seen, []byte("\n\n")) {
		b.began()
	}
	n, err := b.ReadCloser.Read(p)
	b.seen = append(b.seen, p[:n]...)
	return n, err
}

// TestSeveralSolutionsOneCut: of N requests, one whose stream is cut does
// not cancel the others, which were streaming: they arrive whole, and the
// error ends the stream after them, with the usage of all three, the cut
// one's input included.
func TestSeveralSolutionsOneCut(t *testing.T) {
	began := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	release := make(chan struct{}) // the consumer saw solution 0 fail
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(r.Header.Get(indexHeader))
		w.Header().Set("Content-Type", "text/event-stream")
		if i == 0 {
			writeSSE(w, startEvent(100, 1)+deltaEvent(`{"output":"r`))
			// Cut once the others' responses began.
			<-began[1]
			<-began[2]
			return
		}
		writeSSE(w, startEvent(100, 1)+deltaEvent(`{"output":`))
		select {
		case <-release:
		case <-r.Context().Done():
			t.Errorf("request %d was cancelled", i)
			return
		case <-time.After(10 * time.Second):
			t.Errorf("request %d: solution 0 did not fail", i)
		}
		writeSSE(w, deltaEvent(fmt.Sprintf(`"colour %d"}`, i))+endEvents(7))
	})
	p := watchedProvider(t, h, began)
	texts := make([]string, 3)
	var usage provider.Usage
	for c, err := range p.Generate(t.Context(), request(true, 3)) {
		if err != nil {
			if !errors.Is(err, provider.ErrTruncated) {
				t.Errorf("error %v, want a cut", err)
			}
			break
		}
		texts[c.Index] += c.Text
		if c.Usage != nil {
			usage.Add(*c.Usage)
			if c.Index == 0 && c.UsageOnly() {
				close(release)
			}
		}
	}
	if diff := cmp.Diff(texts, []string{`{"output":"r`, `{"output":"colour 1"}`, `{"output":"colour 2"}`}); diff != "" {
		t.Errorf("texts (-got +want):\n%s", diff)
	}
	if want := (provider.Usage{Input: 300, Output: 15}); usage != want {
		t.Errorf("usage %+v, want %+v", usage, want)
	}
}

// TestSeveralSolutionsCancelled: the caller cancels N requests that are
// all streaming. Each was billed the input its message_start counted, so
// the usage before the error counts all three, not only those that ended.
func TestSeveralSolutionsCancelled(t *testing.T) {
	began := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeSSE(w, startEvent(100, 1)+deltaEvent(`{"output":`))
		<-r.Context().Done() // streams until the caller goes
	})
	p := watchedProvider(t, h, began)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Each request read its message_start: the caller goes.
		for _, b := range began {
			<-b
		}
		cancel()
	}()
	usage, last := usageUntilError(p.Generate(ctx, request(true, 3)))
	if !errors.Is(last, context.Canceled) {
		t.Errorf("error %v, want the cancellation", last)
	}
	if want := (provider.Usage{Input: 300, Output: 3}); usage != want {
		t.Errorf("usage %+v, want %+v", usage, want)
	}
}

// TestSeveralSolutionsCancelledGathered: N requests not streamed to the
// caller, whose prompt the cache would keep, go as streams gathered into
// one chunk a solution. Solution 1's stream is cut: its chunk, with its
// text and the usage message_start said, waits for solution 0's turn
// when the caller cancels. The usage before the error counts it, with
// solution 0's.
func TestSeveralSolutionsCancelledGathered(t *testing.T) {
	began := []chan struct{}{make(chan struct{}), make(chan struct{})}
	cut := make(chan struct{}) // request 1's response ended
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(r.Header.Get(indexHeader))
		w.Header().Set("Content-Type", "text/event-stream")
		writeSSE(w, startEvent(100, 1)+deltaEvent(`{"output":`))
		if i == 1 {
			close(cut)
			return
		}
		<-r.Context().Done() // streams until the caller goes
	})
	p := watchedProvider(t, h, began)
	req := request(false, 2)
	req.Messages[0].Text = strings.Repeat("You are terse. ", 2000)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-began[0]
		<-cut
		// Solution 1's chunk and error reach the adapter's merge, which
		// holds them for solution 0's turn.
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	usage, last := usageUntilError(p.Generate(ctx, req))
	if !errors.Is(last, context.Canceled) {
		t.Errorf("error %v, want the cancellation", last)
	}
	if want := (provider.Usage{Input: 200, Output: 2}); usage != want {
		t.Errorf("usage %+v, want %+v", usage, want)
	}
}

// usageUntilError sums the usage of the chunks of seq until its error,
// which it returns.
func usageUntilError(seq iter.Seq2[*provider.Chunk, error]) (provider.Usage, error) {
	var usage provider.Usage
	for c, err := range seq {
		if err != nil {
			return usage, err
		}
		if c.Usage != nil {
			usage.Add(*c.Usage)
		}
	}
	return usage, nil
}
