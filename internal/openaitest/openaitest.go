// Package openaitest is a fake OpenAI chat-completions server for tests:
// it speaks the real wire format, a JSON body or an SSE stream as the
// request asks, with usage, and answers each request with the content a
// function chooses from the request body.
package openaitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Usage is the usage every answer reports.
const Usage = `{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19,"prompt_tokens_details":{"cached_tokens":2}}`

// Server starts a server whose answer to each request is answer(body).
// It is closed when the test ends.
func Server(t testing.TB, answer func(body []byte) string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Stream bool `json:"stream"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("request body: %v", err)
		}
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			t.Errorf("path %s", r.URL.Path)
		}
		content := answer(body)
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
			mid := len(content) / 2
			for _, part := range []string{content[:mid], content[mid:]} {
				q, _ := json.Marshal(part)
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", q)
			}
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":%s}\n\n", Usage)
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		q, _ := json.Marshal(content)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":%s}`, q, Usage)
	}))
	t.Cleanup(srv.Close)
	return srv
}
