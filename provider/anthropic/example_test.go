package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/anthropic"
)

// A streamed answer as the Messages API sends it.
const sse = `event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_read_input_tokens":100,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"{\"output\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\"Paris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}

event: message_stop
data: {"type":"message_stop"}

`

func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sse)
	}))
	defer srv.Close()

	p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-example", BaseURL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &provider.Request{
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Text: "You are terse."},
			{Role: provider.RoleUser, Text: "What is the capital of France?"},
		},
		Schema:     []byte(`{"type":"object","properties":{"output":{"type":"string"}},"required":["output"]}`),
		SchemaName: "solution",
		Stream:     true,
	}
	for c, err := range p.Generate(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if c.Text != "" {
			fmt.Printf("solution %d: %s\n", c.Index, c.Text)
		}
		if c.Done {
			fmt.Println("done:", c.FinishReason)
		}
		if c.Usage != nil {
			fmt.Printf("usage: %+v\n", *c.Usage)
		}
	}
	// Output:
	// solution 0: {"output":
	// solution 0: "Paris"}
	// done: end_turn
	// usage: {Input:25 Output:6 Thinking:0 CacheRead:100 CacheWrite:0 CacheWriteLong:0}
}

// An error response becomes a *provider.Error that provider.Retry
// understands.
func Example_errors() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"},"request_id":"req_01"}`)
	}))
	defer srv.Close()

	p, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-example", BaseURL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "Hi"}}}
	_, err = provider.Collect(p.Generate(context.Background(), req))
	fmt.Println(err)
	if pe, ok := errors.AsType[*provider.Error](err); ok {
		fmt.Println(pe.Code, pe.RetryAfter, pe.Temporary())
	}
	// Output:
	// anthropic claude-sonnet-4-6: 429 Too Many Requests (rate_limit_error): Rate limited
	// rate_limit_error 20s true
}
