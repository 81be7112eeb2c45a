package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/openai"
)

// This example streams an answer from a local OpenAI-compatible server
// (here a stand-in for Ollama) that needs no API key and shows its
// reasoning.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, event := range []string{
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570400,"model":"qwen3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"France's capital is Paris."},"finish_reason":null}]}`,
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570400,"model":"qwen3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":"{\"output\":"},"finish_reason":null}]}`,
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570400,"model":"qwen3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":"\"Paris\"}"},"finish_reason":null}]}`,
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570401,"model":"qwen3:8b","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}`,
			`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741570401,"model":"qwen3:8b","choices":[],"usage":{"prompt_tokens":24,"completion_tokens":19,"total_tokens":43}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", event)
		}
	}))
	defer srv.Close()

	p, err := openai.New(openai.Config{
		Name:    "ollama",
		BaseURL: srv.URL + "/v1", // http://localhost:11434/v1 for a real Ollama
		Model:   "qwen3:8b",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &provider.Request{
		Messages: []provider.Message{
			{Role: provider.RoleSystem, Text: "Answer in JSON."},
			{Role: provider.RoleUser, Text: "What is the capital of France?"},
		},
		Schema: []byte(`{"type":"object","properties":{"output":{"type":"string"}},"required":["output"]}`),
		Stream: true,
	}
	for c, err := range provider.Retry(p, provider.RetryConfig{}).Generate(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if c.Thinking != "" {
			fmt.Println("thinking:", c.Thinking)
		}
		if c.Text != "" {
			fmt.Println("text:", c.Text)
		}
		if c.Done {
			fmt.Println("finish:", c.FinishReason)
		}
		if c.Usage != nil {
			fmt.Printf("usage: %+v\n", *c.Usage)
		}
	}
	// Output:
	// thinking: France's capital is Paris.
	// text: {"output":
	// text: "Paris"}
	// finish: stop
	// usage: {Input:24 Output:19 Thinking:0 CacheRead:0 CacheWrite:0 CacheWriteLong:0}
}
