package openai

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/augceo/agent/provider/internal/eventtest"
)

// chunkView is what the stream reads of a chunk.
type chunkView struct {
	ID      string
	Choices []choiceView
	Usage   *wireUsage
}

type choiceView struct {
	Index                                    int64
	Content, Refusal, Thinking, FinishReason string
	Filtered                                 []string
}

func viewOf(c chunk) chunkView {
	v := chunkView{ID: c.ID, Usage: c.Usage}
	for _, ch := range c.Choices {
		v.Choices = append(v.Choices, choiceView{ch.Index, ch.Delta.Content, ch.Delta.Refusal,
			firstNonEmpty(ch.Delta.ReasoningContent, ch.Delta.Reasoning), ch.FinishReason, filtered(ch.ContentFilterResults)})
	}
	return v
}

var chunkKeys = []string{"id", "choices", "index", "delta", "content", "refusal", "reasoning_content", "reasoning",
	"finish_reason", "usage", "prompt_tokens", "completion_tokens", "prompt_tokens_details", "cached_tokens",
	"cache_write_tokens", "completion_tokens_details", "reasoning_tokens", "error", "content_filter_results", "filtered"}

// FuzzDecodeChunk checks that decodeChunk decodes an event as the SDK does,
// on the input that eventtest.Comparable lets through.
func FuzzDecodeChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"choices":[{"index":1,"delta":{"content":"{\"output\":"},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"Hm.","reasoning":"Hm."}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning":"Hm."}}]}`,
		`{"choices":[{"index":0,"delta":{"refusal":"No."},"finish_reason":"stop"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":1117,"completion_tokens":146,"total_tokens":1263,"prompt_tokens_details":{"cached_tokens":1024,"cache_write_tokens":3},"completion_tokens_details":{"reasoning_tokens":128}}}`,
		`{"choices":[{"index":"1","delta":{"content":5}}],"usage":{"prompt_tokens":12.0}}`,
		`{"error":{"message":"overloaded","type":"server_error"}}`,
		`{"choices":[null,{"delta":null}],"usage":{}}`,
		`{"choices":[{"delta":{"content":"\ud800 \u00e9 \u0041"}}]}`,
		`{"choices":[{"index":1e2}]}`,
		`{"choices":[{"index":-0}]}`,
		`{"choices":[{"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"violence":{"filtered":true,"severity":"medium"}},"delta":{},"finish_reason":"content_filter","index":0,"logprobs":null}]}`,
		`{"choices":[],"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"jailbreak":{"filtered":false,"detected":false}}}]}`,
		`[1]`, `"x"`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !eventtest.Comparable(data, chunkKeys...) {
			t.Skip()
		}
		ev := ssestream.Event{Data: data}
		var got, want chunk
		err := decodeChunk(ev, &got)
		wantErr := sdkChunk(ev, &want)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("%s: error %v, want the SDK's %v", data, err, wantErr)
		}
		if diff := cmp.Diff(viewOf(got), viewOf(want)); diff != "" {
			t.Errorf("%s: (-got +want, the SDK's)\n%s", data, diff)
		}
	})
}
