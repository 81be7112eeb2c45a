package gemini

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/stops"
)

// answer turns a whole generateContent response into one chunk per
// candidate, the last one carrying the usage and the model version. stop
// is the first candidate the API stopped abnormally (see [FinishError]),
// to be yielded after the chunks.
func answer(resp *genai.GenerateContentResponse) (chunks []*provider.Chunk, stop *FinishError, err error) {
	for _, cand := range resp.Candidates {
		if cand == nil {
			continue
		}
		ch, err := chunk(cand)
		if err != nil {
			return nil, nil, err
		}
		ch.Done = true // a whole answer: a missing finishReason reads as ""
		chunks = append(chunks, ch)
		stop = first(stop, stopped(cand))
	}
	if len(chunks) == 0 {
		if err := blocked(resp.PromptFeedback); err != nil {
			return nil, nil, err
		}
		return nil, nil, ErrNoCandidates
	}
	last := chunks[len(chunks)-1]
	last.Usage, last.Model, last.ResponseID = normalize(resp.UsageMetadata), resp.ModelVersion, resp.ResponseID
	return chunks, stop, nil
}

// blocked returns the error for a prompt the feedback says was blocked,
// nil if it was not.
func blocked(fb *genai.GenerateContentResponsePromptFeedback) *BlockedError {
	if fb == nil || fb.BlockReason == "" {
		return nil
	}
	return &BlockedError{Reason: string(fb.BlockReason), Categories: blockedBy(fb.SafetyRatings)}
}

// stopped returns the error for a candidate whose finishReason is neither
// its natural end nor a token limit, nil for the others and for one that
// has not finished.
func stopped(cand *genai.Candidate) *FinishError {
	switch cand.FinishReason {
	case "", genai.FinishReasonUnspecified, genai.FinishReasonStop, genai.FinishReasonMaxTokens, genai.FinishReasonContinuation:
		return nil
	}
	return &FinishError{Index: int(cand.Index), Reason: string(cand.FinishReason), Categories: blockedBy(cand.SafetyRatings)}
}

// first returns whichever of a and b has the lower index, with the other
// and its Others among its Others; nil counts as none.
func first(a, b *FinishError) *FinishError {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case b.Index < a.Index:
		a, b = b, a
	}
	a.Others = stops.Others(a.Index, slices.Concat(a.Others, b.Solutions()))
	return a
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
