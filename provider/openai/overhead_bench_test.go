package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/overheadtest"
)

// BenchmarkAdapterOverhead prices the adapter against net/http and
// encoding/json: see package overheadtest. The stream is what OpenAI sends,
// with every field of a chat.completion.chunk.
func BenchmarkAdapterOverhead(b *testing.B) {
	overheadtest.Run(b, overheadtest.Wire{
		Path:   "/v1/chat/completions",
		Stream: benchStream,
		New: func(b *testing.B, hc *http.Client, baseURL string) provider.Provider {
			p, err := New(Config{APIKey: "sk-test", BaseURL: baseURL + "/v1", Model: "gpt-5-mini", HTTPClient: hc})
			if err != nil {
				b.Fatal(err)
			}
			return p
		},
		Decode: func(body io.Reader, text *strings.Builder) error {
			var finished, usage bool
			var err error
			scanErr := overheadtest.ScanData(body, func(_, data []byte) bool {
				if string(data) == "[DONE]" {
					return false
				}
				var c struct {
					Choices []struct {
						Delta struct {
							Content string `json:"content"`
						} `json:"delta"`
						FinishReason string `json:"finish_reason"`
					} `json:"choices"`
					Usage *struct {
						PromptTokens     int `json:"prompt_tokens"`
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				}
				if err = json.Unmarshal(data, &c); err != nil {
					return false
				}
				for _, ch := range c.Choices {
					text.WriteString(ch.Delta.Content)
					finished = finished || ch.FinishReason != ""
				}
				usage = usage || c.Usage != nil
				return true
			})
			switch {
			case scanErr != nil:
				return scanErr
			case err != nil:
				return err
			case !finished || !usage:
				return fmt.Errorf("finish_reason %v, usage %v", finished, usage)
			}
			return nil
		},
	})
}

// benchStream renders answer as OpenAI streams it: a role delta, content
// deltas of size bytes (with the obfuscation padding, whose length varies),
// the finish_reason, the usage and [DONE].
func benchStream(answer string, size int) []byte {
	const head = `data: {"id":"chatcmpl-C3aBcDeFgHiJkLmNoPqRsTuVwXyZ1","object":"chat.completion.chunk","created":1741570400,"model":"gpt-5-mini-2025-08-07","service_tier":"default","system_fingerprint":null,`
	var b []byte
	b = append(b, head+`"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x2Qv"}`+"\n\n"...)
	for _, piece := range strict.Pieces(answer, size) {
		b = fmt.Appendf(b, head+`"choices":[{"index":0,"delta":{"content":%s},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"%s"}`+"\n\n",
			quote(piece), "Zt9k"[:1+len(piece)%4])
	}
	b = append(b, head+`"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null,"obfuscation":"mN0pQ"}`+"\n\n"...)
	b = append(b, head+`"choices":[],"usage":{"prompt_tokens":2117,"completion_tokens":446,"total_tokens":2563,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":128,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"obfuscation":"Xb"}`+"\n\n"...)
	return append(b, "data: [DONE]\n\n"...)
}
