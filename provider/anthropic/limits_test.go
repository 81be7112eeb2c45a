package anthropic

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/limittest"
)

func TestLimits(t *testing.T) {
	limittest.Run(t, limittest.Wire{
		Name:  "anthropic",
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
		Start: "event: message_start\n" +
			`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}` + "\n\n" +
			"event: content_block_start\n" +
			`data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n",
		Piece: func(text string) string {
			return "event: content_block_delta\n" +
				fmt.Sprintf(`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, text) + "\n\n"
		},
		End: "event: content_block_stop\n" +
			`data: {"type":"content_block_stop","index":0}` + "\n\n" +
			"event: message_delta\n" +
			`data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}` + "\n\n" +
			"event: message_stop\n" +
			`data: {"type":"message_stop"}` + "\n\n",
		Body: func(text string) string {
			return fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}`, text)
		},
		RateLimit: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
	})
}
