package openai

import (
	"encoding/json"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// chunk is what the adapter reads of a chat.completion.chunk event.
type chunk struct {
	ID      string        `json:"id"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *wireUsage    `json:"usage"` // nil when absent or null
	// Error is set when the event has an "error" key (in any case): an
	// error event, which decodeChunk leaves to the SDK.
	Error json.RawMessage `json:"error"`
}

type chunkChoice struct {
	Index int64 `json:"index"`
	Delta struct {
		Content string `json:"content"`
		Refusal string `json:"refusal"`
		// Visible reasoning, which the SDK has no field for; see
		// reasoningFields.
		ReasoningContent string `json:"reasoning_content"`
		Reasoning        string `json:"reasoning"`
	} `json:"delta"`
	FinishReason string `json:"finish_reason"`
	// ContentFilterResults is Azure OpenAI's verdict on the choice, which
	// the SDK has no field for; see [filtered].
	ContentFilterResults json.RawMessage `json:"content_filter_results"`
}

// wireUsage is what the adapter reads of a usage object.
type wireUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// decodeChunk decodes one event of a stream, other than [DONE], into *c,
// which it zeroes first: the stream decodes every event into one chunk, as
// a new one would escape to the heap for each event. It fails as the SDK's
// stream does: with an *ssestream.StreamError for an error event, with a
// JSON error otherwise.
//
// The SDK's decoder (its apijson package) walks the whole event with gjson
// and reflection, fills every field the API has and records each one's
// presence, which costs several times what the request's own HTTP and
// JSON do. So decodeChunk first decodes with encoding/json into chunk, only
// the fields the adapter reads, and takes that when it succeeds. When it
// fails, or the event has an "error" key, it hands the event to the SDK's
// stream, which then decides as before: the SDK also accepts values of
// another JSON type than the API's (a number for a string, "1" for an
// integer), which encoding/json refuses. FuzzDecodeChunk checks that both
// read events alike.
func decodeChunk(ev ssestream.Event, c *chunk) error {
	*c = chunk{}
	if !strings.HasPrefix(ev.Type, "thread.") { // the SDK rewrites those first
		if err := json.Unmarshal(ev.Data, c); err == nil && c.Error == nil {
			return nil
		}
	}
	return sdkChunk(ev, c)
}

// sdkChunk decodes ev into *c, which it zeroes first, with the SDK's
// stream, as NewStreaming does.
func sdkChunk(ev ssestream.Event, c *chunk) error {
	*c = chunk{}
	s := ssestream.NewStream[openai.ChatCompletionChunk](&oneEvent{ev: ev}, nil)
	if !s.Next() {
		return s.Err()
	}
	cc := s.Current()
	c.ID, c.Model = cc.ID, cc.Model
	c.Choices = make([]chunkChoice, len(cc.Choices))
	if cc.JSON.Usage.Valid() {
		u := usageOf(cc.Usage)
		c.Usage = &u
	}
	for i, ch := range cc.Choices {
		d := &c.Choices[i]
		d.Index, d.FinishReason = ch.Index, ch.FinishReason
		d.Delta.Content, d.Delta.Refusal = ch.Delta.Content, ch.Delta.Refusal
		// reasoning returns the first of the two fields that holds text.
		d.Delta.ReasoningContent = reasoning(ch.Delta.JSON.ExtraFields)
		if raw := ch.JSON.ExtraFields["content_filter_results"].Raw(); raw != "" && raw != "null" {
			d.ContentFilterResults = json.RawMessage(raw)
		}
	}
	return nil
}

// usageOf copies what the adapter reads of the SDK's usage.
func usageOf(u openai.CompletionUsage) wireUsage {
	var w wireUsage
	w.PromptTokens, w.CompletionTokens = u.PromptTokens, u.CompletionTokens
	w.PromptTokensDetails.CachedTokens = u.PromptTokensDetails.CachedTokens
	w.PromptTokensDetails.CacheWriteTokens = u.PromptTokensDetails.CacheWriteTokens
	w.CompletionTokensDetails.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	return w
}

// oneEvent is an ssestream.Decoder of one event.
type oneEvent struct {
	ev   ssestream.Event
	read bool
}

func (o *oneEvent) Next() bool {
	next := !o.read
	o.read = true
	return next
}

func (o *oneEvent) Event() ssestream.Event { return o.ev }
func (o *oneEvent) Close() error           { return nil }
func (o *oneEvent) Err() error             { return nil }
