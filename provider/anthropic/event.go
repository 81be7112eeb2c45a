package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
)

// event is what the adapter reads of an event of a Messages stream.
type event struct {
	Type    string `json:"type"`
	Index   int64  `json:"index"`
	Message struct {
		ID    string    `json:"id"`
		Model string    `json:"model"`
		Usage wireUsage `json:"usage"`
	} `json:"message"` // message_start
	ContentBlock struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
		Name     string `json:"name"`
		Input    any    `json:"input"` // a tool_use block's, nil when absent or null
	} `json:"content_block"` // content_block_start
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"` // message_delta
		StopDetails struct {
			Category    string `json:"category"`
			Explanation string `json:"explanation"`
		} `json:"stop_details"` // message_delta of a refusal
	} `json:"delta"` // content_block_delta, message_delta
	Usage wireUsage `json:"usage"` // message_delta
}

// wireUsage is what the adapter reads of a usage object: each count is nil
// when absent or null.
type wireUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	OutputTokensDetails      *struct {
		ThinkingTokens *int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
	CacheCreation *struct { // cache_creation_input_tokens by the entries' lifetime
		Ephemeral1hInputTokens *int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// decodeEvent decodes the data of one event of a stream into *e, which it
// zeroes first: the stream decodes every event into one, as the SDK's
// stream does, since a new one would escape to the heap for each event.
// Ping events, error events and events without data never get here: the
// stream skips or reports them first, as the SDK's stream does.
//
// The SDK's decoder (its apijson package) walks the whole event with gjson
// and reflection, fills every field of every event type and records each
// one's presence, which costs several times what the request's own HTTP
// and JSON do. So decodeEvent decodes with encoding/json into event, only
// the fields the adapter reads, and takes that when it succeeds. When it
// fails, it decodes the event with the SDK's type, as the SDK's stream
// does, which then decides: the SDK also accepts values of another JSON
// type than the API's (a number for a string, "1" for an integer), which
// encoding/json refuses. FuzzDecodeEvent checks that both read events
// alike.
func decodeEvent(data []byte, e *event) error {
	*e = event{}
	if json.Unmarshal(data, e) == nil {
		return nil
	}
	return sdkEvent(data, e)
}

// sdkEvent decodes data with the SDK's type into *e, which it zeroes first.
func sdkEvent(data []byte, e *event) error {
	*e = event{}
	var u sdk.MessageStreamEventUnion
	if err := json.Unmarshal(data, &u); err != nil {
		return err
	}
	e.Type, e.Index = u.Type, u.Index
	e.Message.ID, e.Message.Model = u.Message.ID, string(u.Message.Model)
	e.Message.Usage = wireUsage{
		InputTokens:              &u.Message.Usage.InputTokens,
		OutputTokens:             &u.Message.Usage.OutputTokens,
		CacheReadInputTokens:     &u.Message.Usage.CacheReadInputTokens,
		CacheCreationInputTokens: &u.Message.Usage.CacheCreationInputTokens,
	}
	e.Message.Usage.OutputTokensDetails = &struct {
		ThinkingTokens *int64 `json:"thinking_tokens"`
	}{&u.Message.Usage.OutputTokensDetails.ThinkingTokens}
	e.Message.Usage.CacheCreation = &struct {
		Ephemeral1hInputTokens *int64 `json:"ephemeral_1h_input_tokens"`
	}{&u.Message.Usage.CacheCreation.Ephemeral1hInputTokens}
	b := u.ContentBlock
	e.ContentBlock.Type, e.ContentBlock.Text, e.ContentBlock.Thinking = b.Type, b.Text, b.Thinking
	e.ContentBlock.Name, e.ContentBlock.Input = b.Name, b.Input
	d := u.Delta
	e.Delta.Type, e.Delta.Text, e.Delta.Thinking = d.Type, d.Text, d.Thinking
	e.Delta.PartialJSON, e.Delta.StopReason = d.PartialJSON, string(d.StopReason)
	e.Delta.StopDetails.Category, e.Delta.StopDetails.Explanation = string(d.StopDetails.Category), d.StopDetails.Explanation
	// message_delta's counts are taken only where present.
	du := u.Usage
	valid := func(ok bool, n *int64) *int64 {
		if !ok {
			return nil
		}
		return n
	}
	e.Usage.InputTokens = valid(du.JSON.InputTokens.Valid(), &du.InputTokens)
	e.Usage.OutputTokens = valid(du.JSON.OutputTokens.Valid(), &du.OutputTokens)
	e.Usage.CacheReadInputTokens = valid(du.JSON.CacheReadInputTokens.Valid(), &du.CacheReadInputTokens)
	e.Usage.CacheCreationInputTokens = valid(du.JSON.CacheCreationInputTokens.Valid(), &du.CacheCreationInputTokens)
	if du.JSON.OutputTokensDetails.Valid() {
		e.Usage.OutputTokensDetails = &struct {
			ThinkingTokens *int64 `json:"thinking_tokens"`
		}{valid(du.OutputTokensDetails.JSON.ThinkingTokens.Valid(), &du.OutputTokensDetails.ThinkingTokens)}
	}
	return nil
}

// errorData reports whether the data of an event is an error:
// {"type":"error", ...}, or any object with an "error" member.
func errorData(data []byte) bool {
	if !bytes.Contains(data, []byte(`"error"`)) {
		return false // the usual case, decided without decoding
	}
	var v struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(data, &v) == nil && (v.Type == "error" || (len(v.Error) > 0 && string(v.Error) != "null"))
}

// streamError is the error of an error event, as the SDK's stream makes it:
// an *sdk.Error with the response, and the event's data as its JSON.
func streamError(res *http.Response, data []byte) error {
	ae := &sdk.Error{
		Request: res.Request, Response: res, StatusCode: res.StatusCode,
		RequestID: res.Header.Get("request-id"), WorkspaceID: res.Header.Get("anthropic-workspace-id"),
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("an error event without a message")
	}
	if ae.UnmarshalJSON(data) != nil {
		return fmt.Errorf("received error while streaming: %s", data)
	}
	return ae
}
