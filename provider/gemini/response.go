package gemini

import (
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/augceo/agent/provider"
)

// answer turns a whole generateContent response into one chunk per
// candidate, the last one carrying the usage.
func answer(resp *genai.GenerateContentResponse) ([]*provider.Chunk, error) {
	var chunks []*provider.Chunk
	for _, cand := range resp.Candidates {
		if cand == nil {
			continue
		}
		ch, err := chunk(cand)
		if err != nil {
			return nil, err
		}
		ch.Done = true // a whole answer: a missing finishReason reads as ""
		chunks = append(chunks, ch)
	}
	if len(chunks) == 0 {
		if fb := resp.PromptFeedback; fb != nil && fb.BlockReason != "" {
			return nil, fmt.Errorf("%w: prompt blocked (%s)", ErrNoCandidates, fb.BlockReason)
		}
		return nil, ErrNoCandidates
	}
	chunks[len(chunks)-1].Usage = normalize(resp.UsageMetadata)
	return chunks, nil
}

// chunk maps one candidate (whole, or a streamed piece of it): text parts
// become Text, parts marked thought become Thinking, and a finishReason
// makes it Done.
func chunk(cand *genai.Candidate) (*provider.Chunk, error) {
	if cand.Index < 0 {
		return nil, fmt.Errorf("gemini: candidate index %d", cand.Index)
	}
	ch := &provider.Chunk{Index: int(cand.Index)}
	if cand.Content != nil {
		var text, thinking strings.Builder
		for _, part := range cand.Content.Parts {
			switch {
			case part == nil:
			case part.Thought:
				thinking.WriteString(part.Text)
			default:
				text.WriteString(part.Text)
			}
		}
		ch.Text, ch.Thinking = text.String(), thinking.String()
	}
	if r := cand.FinishReason; r != "" && r != genai.FinishReasonUnspecified {
		ch.Done = true
		ch.FinishReason = finishReason(r)
	}
	return ch, nil
}

// finishReason names Gemini's finish reasons as the other adapters do: STOP
// is "stop", MAX_TOKENS "length", the safety and recitation blocks
// "content_filter"; any other reason is reported in lower case
// ("malformed_function_call", "other", "continuation", ...).
func finishReason(r genai.FinishReason) string {
	switch r {
	case genai.FinishReasonStop:
		return "stop"
	case genai.FinishReasonMaxTokens:
		return "length"
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return "content_filter"
	}
	return strings.ToLower(string(r))
}

// normalize maps usageMetadata onto provider.Usage. promptTokenCount
// includes the cached tokens, so they are taken out of Input;
// candidatesTokenCount excludes the thoughts. Tokens of tool-use prompts
// (search grounding and the like) count as input.
func normalize(u *genai.GenerateContentResponseUsageMetadata) *provider.Usage {
	if u == nil {
		return &provider.Usage{}
	}
	return &provider.Usage{
		Input:     int(u.PromptTokenCount-u.CachedContentTokenCount) + int(u.ToolUsePromptTokenCount),
		Output:    int(u.CandidatesTokenCount),
		Thinking:  int(u.ThoughtsTokenCount),
		CacheRead: int(u.CachedContentTokenCount),
	}
}
