package anthropic

import (
	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/augceo/agent/provider"
)

// tokens is the usage as the API counts it.
type tokens struct {
	input, output, thinking, cacheRead, cacheWrite int64
}

func usageOf(u sdk.Usage) tokens {
	return tokens{
		input:      u.InputTokens,
		output:     u.OutputTokens,
		thinking:   u.OutputTokensDetails.ThinkingTokens,
		cacheRead:  u.CacheReadInputTokens,
		cacheWrite: u.CacheCreationInputTokens,
	}
}

// merge takes the counts that a message_delta event reports, which are
// cumulative, over those of message_start.
func (t *tokens) merge(d sdk.MessageDeltaUsage) {
	if d.JSON.InputTokens.Valid() {
		t.input = d.InputTokens
	}
	if d.JSON.OutputTokens.Valid() {
		t.output = d.OutputTokens
	}
	if d.JSON.OutputTokensDetails.Valid() && d.OutputTokensDetails.JSON.ThinkingTokens.Valid() {
		t.thinking = d.OutputTokensDetails.ThinkingTokens
	}
	if d.JSON.CacheReadInputTokens.Valid() {
		t.cacheRead = d.CacheReadInputTokens
	}
	if d.JSON.CacheCreationInputTokens.Valid() {
		t.cacheWrite = d.CacheCreationInputTokens
	}
}

// usage normalises t: input_tokens already excludes the cache, and
// output_tokens includes the thinking tokens, which
// output_tokens_details.thinking_tokens breaks out.
func (t tokens) usage() provider.Usage {
	return provider.Usage{
		Input:      int(t.input),
		Output:     int(max(t.output-t.thinking, 0)),
		Thinking:   int(t.thinking),
		CacheRead:  int(t.cacheRead),
		CacheWrite: int(t.cacheWrite),
	}
}
