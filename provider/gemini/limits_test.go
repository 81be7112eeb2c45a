package gemini

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/limittest"
)

func TestLimits(t *testing.T) {
	limittest.Run(t, limittest.Wire{
		Name:  name,
		Model: testModel,
		New: func(t *testing.T, hc *http.Client, baseURL string, l limittest.Limits) provider.Provider {
			p, err := New(Config{
				APIKey: testKey, BaseURL: baseURL, Model: testModel, HTTPClient: hc,
				FirstByteTimeout: l.FirstByte, IdleTimeout: l.Idle, MaxAnswerBytes: l.MaxAnswerBytes,
			})
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		Piece: func(text string) string {
			return fmt.Sprintf(`data: {"candidates":[{"content":{"parts":[{"text":%q}],"role":"model"},"index":0}],"modelVersion":"gemini-test"}`, text) + "\r\n\r\n"
		},
		End: `data: {"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5},"modelVersion":"gemini-test"}` + "\r\n\r\n",
		Body: func(text string) string {
			return fmt.Sprintf(`{"candidates":[{"content":{"parts":[{"text":%q}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5},"modelVersion":"gemini-test"}`, text)
		},
		RateLimit: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`,
	})
}
