package openai

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/limittest"
)

func TestLimits(t *testing.T) {
	limittest.Run(t, limittest.Wire{
		Name:  DefaultName,
		Model: "gpt-test",
		New: func(t *testing.T, hc *http.Client, baseURL string, l limittest.Limits) provider.Provider {
			p, err := New(Config{
				APIKey: "sk-test", BaseURL: baseURL + "/v1", Model: "gpt-test", HTTPClient: hc,
				FirstByteTimeout: l.FirstByte, IdleTimeout: l.Idle, MaxAnswerBytes: l.MaxAnswerBytes,
			})
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		Piece: func(text string) string {
			return fmt.Sprintf(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", text)
		},
		End: `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
			`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}` + "\n\n" +
			"data: [DONE]\n\n",
		Body: func(text string) string {
			return fmt.Sprintf(`{"id":"c1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`, text)
		},
		RateLimit: `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
	})
}
