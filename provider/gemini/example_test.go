package gemini_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/gemini"
)

// Example streams an answer from a stand-in for the Gemini API that speaks
// its wire format: server-sent events, thoughts marked "thought": true, and
// usage with cached tokens.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(r.Method, r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"candidates": [{"content": {"parts": [{"text": "The capital of France.","thought": true}],"role": "model"},"index": 0}]}`+"\r\n\r\n")
		io.WriteString(w, `data: {"candidates": [{"content": {"parts": [{"text": "{\"output\":"}],"role": "model"},"index": 0}]}`+"\r\n\r\n")
		io.WriteString(w, `data: {"candidates": [{"content": {"parts": [{"text": "\"Paris\"}"}],"role": "model"},"finishReason": "STOP","index": 0}],`+
			`"usageMetadata": {"promptTokenCount": 30,"cachedContentTokenCount": 20,"candidatesTokenCount": 5,"thoughtsTokenCount": 12,"totalTokenCount": 47}}`+"\r\n\r\n")
	}))
	defer srv.Close()

	p, err := gemini.New(gemini.Config{APIKey: "test-key", BaseURL: srv.URL, Model: "gemini-2.5-flash"})
	if err != nil {
		panic(err)
	}
	req := &provider.Request{
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Text: "Answer in JSON."},
			{Role: provider.RoleUser, Text: "What is the capital of France?"},
		},
		Schema:   []byte(`{"type":"object","properties":{"output":{"type":"string"}},"required":["output"]}`),
		Stream:   true,
		Thinking: 1024,
	}
	for c, err := range p.Generate(context.Background(), req) {
		if err != nil {
			panic(err)
		}
		if c.Thinking != "" {
			fmt.Printf("thinking: %s\n", c.Thinking)
		}
		if c.Text != "" {
			fmt.Printf("text: %s\n", c.Text)
		}
		if c.Done {
			fmt.Printf("done: %s\n", c.FinishReason)
		}
		if c.Usage != nil {
			fmt.Printf("usage: %+v\n", *c.Usage)
		}
	}
	// Output:
	// POST /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse
	// thinking: The capital of France.
	// text: {"output":
	// text: "Paris"}
	// done: stop
	// usage: {Input:10 Output:5 Thinking:12 CacheRead:20 CacheWrite:0 CacheWriteLong:0}
}
