package anthropic

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
// encoding/json: see package overheadtest. The stream is what the Messages
// API sends, ping included. The run's ten tools have more optional
// parameters than structured outputs take, so the adapter sends the
// schema as a forced tool, and the answer streams as the tool's input.
func BenchmarkAdapterOverhead(b *testing.B) {
	overheadtest.Run(b, overheadtest.Wire{
		Path:   "/v1/messages",
		Stream: benchStream,
		New: func(b *testing.B, hc *http.Client, baseURL string) provider.Provider {
			p, err := New(Config{APIKey: testKey, BaseURL: baseURL, Model: "claude-sonnet-4-6", HTTPClient: hc})
			if err != nil {
				b.Fatal(err)
			}
			return p
		},
		Decode: func(body io.Reader, text *strings.Builder) error {
			var stopped bool
			var err error
			scanErr := overheadtest.ScanData(body, func(_, data []byte) bool {
				var ev struct {
					Type  string `json:"type"`
					Delta struct {
						Type        string `json:"type"`
						PartialJSON string `json:"partial_json"`
						StopReason  string `json:"stop_reason"`
					} `json:"delta"`
					Usage *struct {
						OutputTokens int `json:"output_tokens"`
					} `json:"usage"`
				}
				if err = json.Unmarshal(data, &ev); err != nil {
					return false
				}
				switch ev.Type {
				case "content_block_delta":
					text.WriteString(ev.Delta.PartialJSON)
				case "message_stop":
					stopped = true
					return false
				}
				return true
			})
			switch {
			case scanErr != nil:
				return scanErr
			case err != nil:
				return err
			case !stopped:
				return fmt.Errorf("no message_stop")
			}
			return nil
		},
	})
}

// benchStream renders answer as the Messages API streams a forced tool's
// input: the message_start, a tool_use block of input_json_delta pieces of
// size bytes after a ping, the message_delta and message_stop.
func benchStream(answer string, size int) []byte {
	b := []byte("event: message_start\n" +
		`data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":412,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}` + "\n\n" +
		"event: content_block_start\n" +
		`data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"solution","input":{}}}` + "\n\n" +
		"event: ping\n" +
		`data: {"type": "ping"}` + "\n\n")
	for _, piece := range strict.Pieces(answer, size) {
		b = fmt.Appendf(b, "event: content_block_delta\n"+
			`data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":%s}}`+"\n\n", js(piece))
	}
	return append(b, "event: content_block_stop\n"+
		`data: {"type":"content_block_stop","index":0}`+"\n\n"+
		"event: message_delta\n"+
		`data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":446}}`+"\n\n"+
		"event: message_stop\n"+
		`data: {"type":"message_stop"}`+"\n\n"...)
}
