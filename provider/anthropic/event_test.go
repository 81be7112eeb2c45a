package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider/internal/eventtest"
)

// eventView is what the stream reads of an event: message_start's counts
// with 0 for those absent, message_delta's with nil, and the tool input as
// the stream sends it on.
type eventView struct {
	Type                                          string
	Index                                         int64
	MessageID                                     string
	Start                                         tokens
	BlockType, BlockText, BlockThinking, ToolName string
	ToolInput                                     string
	DeltaType, Text, Thinking, PartialJSON, Stop  string
	StopCategory, StopExplanation                 string
	Delta                                         wireUsage
}

func viewOf(e event) eventView {
	var start tokens
	start.merge(e.Message.Usage)
	input := ""
	if e.ContentBlock.Input != nil {
		b, err := json.Marshal(e.ContentBlock.Input)
		input = string(b)
		if err != nil {
			input = err.Error()
		}
	}
	b, d := e.ContentBlock, e.Delta
	return eventView{e.Type, e.Index, e.Message.ID, start, b.Type, b.Text, b.Thinking, b.Name, input,
		d.Type, d.Text, d.Thinking, d.PartialJSON, d.StopReason,
		d.StopDetails.Category, d.StopDetails.Explanation, e.Usage}
}

var eventKeys = []string{"type", "index", "message", "id", "usage", "input_tokens", "output_tokens",
	"cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens_details", "thinking_tokens",
	"cache_creation", "ephemeral_1h_input_tokens",
	"content_block", "text", "thinking", "name", "input", "delta", "partial_json", "stop_reason",
	"stop_details", "category", "explanation"}

// FuzzDecodeEvent checks that decodeEvent decodes an event as the SDK does,
// on the input that eventtest.Comparable lets through.
func FuzzDecodeEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":412,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"cache_creation":{"ephemeral_5m_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}`,
		`{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"usage":{"input_tokens":12,"cache_creation_input_tokens":2500,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":2500},"output_tokens":1}}}`,
		`{"type":"message_start","message":{"id":"msg_3","usage":{"input_tokens":"12","cache_creation_input_tokens":2500,"cache_creation":{"ephemeral_1h_input_tokens":2500}}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"solution","input":{"b":[1,2.5,"<x>"],"a":null}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"{\"output\":"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hm."}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":31,"output_tokens_details":{"thinking_tokens":12},"input_tokens":null}}`,
		`{"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null,"stop_details":{"type":"refusal","category":"cyber","explanation":"This request was declined because it could enable cyber harm."}},"usage":{"output_tokens":9}}`,
		`{"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null,"stop_details":{"type":"refusal","category":null,"explanation":null}},"usage":{"output_tokens":9}}`,
		`{"type":"message_stop"}`,
		`{"type":"content_block_delta","index":"1","delta":{"type":"text_delta","text":5}}`,
		`{"type":"message_delta","usage":{"output_tokens":"31"}}`,
		`[1]`, `"x"`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !eventtest.Comparable(data, eventKeys...) {
			t.Skip()
		}
		var got, want event
		err := decodeEvent(data, &got)
		wantErr := sdkEvent(data, &want)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("%s: error %v, want the SDK's %v", data, err, wantErr)
		}
		if diff := cmp.Diff(viewOf(got), viewOf(want), cmp.AllowUnexported(tokens{})); diff != "" {
			t.Errorf("%s: (-got +want, the SDK's)\n%s", data, diff)
		}
	})
}

// TestDecodeEventCacheHour: message_start's count of the hour's cache
// writes is read whichever decoder reads the event: one the SDK decodes
// (a count sent as a string) keeps it too.
func TestDecodeEventCacheHour(t *testing.T) {
	for _, data := range []string{
		`{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":12,"cache_creation_input_tokens":2500,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":2500}}}}`,
		`{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":"12","cache_creation_input_tokens":2500,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":2500}}}}`,
	} {
		var e event
		if err := decodeEvent([]byte(data), &e); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		var u tokens
		u.merge(e.Message.Usage)
		if got := u.usage(); got.CacheWrite != 2500 || got.CacheWriteLong != 2500 || got.Input != 12 {
			t.Errorf("%s: usage %+v, want 12 input, 2500 written for an hour", data, got)
		}
	}
}
