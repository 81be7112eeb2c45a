package anthropic

import (
	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/augceo/agent/provider"
)

// tokens is the usage as the API counts it.
type tokens struct {
	input, output, thinking, cacheRead, cacheWrite int64
	cacheWriteHour                                 int64 // of cacheWrite, the entries that last an hour
}

func usageOf(u sdk.Usage) tokens {
	return tokens{
		input:          u.InputTokens,
		output:         u.OutputTokens,
		thinking:       u.OutputTokensDetails.ThinkingTokens,
		cacheRead:      u.CacheReadInputTokens,
		cacheWrite:     u.CacheCreationInputTokens,
		cacheWriteHour: u.CacheCreation.Ephemeral1hInputTokens,
	}
}

// merge takes the counts that u has: those of message_start, and then
// those of message_delta, which are cumulative, over them.
func (t *tokens) merge(u wireUsage) {
	set := func(dst *int64, n *int64) {
		if n != nil {
			*dst = *n
		}
	}
	set(&t.input, u.InputTokens)
	set(&t.output, u.OutputTokens)
	if u.OutputTokensDetails != nil {
		set(&t.thinking, u.OutputTokensDetails.ThinkingTokens)
	}
	set(&t.cacheRead, u.CacheReadInputTokens)
	set(&t.cacheWrite, u.CacheCreationInputTokens)
	if u.CacheCreation != nil {
		set(&t.cacheWriteHour, u.CacheCreation.Ephemeral1hInputTokens)
	}
}

// usage normalises t: input_tokens already excludes the cache, and
// output_tokens includes the thinking tokens, which
// output_tokens_details.thinking_tokens breaks out.
func (t tokens) usage() provider.Usage {
	return provider.Usage{
		Input:          int(t.input),
		Output:         int(max(t.output-t.thinking, 0)),
		Thinking:       int(t.thinking),
		CacheRead:      int(t.cacheRead),
		CacheWrite:     int(t.cacheWrite),
		CacheWriteLong: int(min(t.cacheWriteHour, t.cacheWrite)),
	}
}
