package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
