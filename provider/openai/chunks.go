package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/limit"
	"github.com/augceo/agent/provider/internal/sse"
	"github.com/augceo/agent/provider/internal/stops"
)

// reasoningFields are the names under which compatible servers send
// visible reasoning, in order of preference: DeepSeek and older vLLM use
// reasoning_content, Ollama, OpenRouter and newer vLLM use reasoning (some
// vLLM versions send both, with the same text).
var reasoningFields = []string{"reasoning_content", "reasoning"}

// send posts body with the SDK's Chat Completions call, which adds the
// headers and reads the response; the params it is given are empty, as
// body replaces what it would encode.
func (p *Provider) send(ctx context.Context, body []byte, opts ...option.RequestOption) (*openai.ChatCompletion, error) {
	opts = append(opts, option.WithRequestBody("application/json", body))
	return p.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{}, opts...)
}

// complete makes a plain request and yields one chunk per choice.
func (p *Provider) complete(ctx context.Context, body []byte, yield func(*provider.Chunk, error) bool) {
	var res *http.Response
	cc, err := p.send(ctx, body, option.WithResponseInto(&res))
	if err != nil {
		yield(nil, p.apiError(ctx, res, err))
		return
	}
	if e, ok := cc.JSON.ExtraFields["error"]; ok && e.Raw() != "null" {
		yield(nil, p.inBandError([]byte(cc.RawJSON()), "error in the response body"))
		return
	}
	if len(cc.Choices) == 0 {
		yield(nil, fmt.Errorf("%s: response has no choices", p.cfg.Name))
		return
	}
	choices := slices.SortedFunc(slices.Values(cc.Choices), func(a, b openai.ChatCompletionChoice) int {
		return cmp.Compare(a.Index, b.Index)
	})
	var (
		refusal *RefusalError
		filter  *FilterError
		stopped []int // the choices refused or filtered
	)
	for i, c := range choices {
		chunk := &provider.Chunk{
			Index:        int(c.Index),
			Text:         c.Message.Content,
			Thinking:     reasoning(c.Message.JSON.ExtraFields),
			Done:         true,
			FinishReason: c.FinishReason,
		}
		if c.Message.Refusal != "" {
			stopped = append(stopped, int(c.Index))
			if refusal == nil {
				refusal = &RefusalError{Index: int(c.Index), Message: c.Message.Refusal}
			}
		}
		if c.FinishReason == finishFiltered {
			stopped = append(stopped, int(c.Index))
			if filter == nil {
				filter = &FilterError{Index: int(c.Index), Categories: filtered([]byte(c.JSON.ExtraFields["content_filter_results"].Raw()))}
			}
		}
		if i == len(choices)-1 {
			u := usage(usageOf(cc.Usage))
			chunk.Usage, chunk.Model, chunk.ResponseID = &u, cc.Model, cc.ID
			// A compatible server may count nothing: the call was
			// billed all the same, or ran on someone's hardware.
			chunk.UsageLost = !cc.JSON.Usage.Valid()
		}
		if !yield(chunk, nil) {
			return
		}
	}
	if err := stopError(refusal, filter, stopped); err != nil {
		yield(nil, err)
	}
}

// stream makes a streaming request and yields its deltas. The last Done
// chunk is held back until the stream ends, so that the usage, which
// arrives after every finish_reason, rides on it, with the model and the
// response id.
//
// The SDK sends the request; package sse splits the body into events,
// which the SDK's decoder does too but drops the error lines of some
// servers; each event is decoded by decodeChunk, not by the SDK's stream:
// see there.
func (p *Provider) stream(ctx context.Context, body []byte, yield func(*provider.Chunk, error) bool) {
	// As NewStreaming does, but with the response body left to us.
	var res *http.Response
	_, err := p.send(ctx, body, option.WithResponseBodyInto(&res))
	if res != nil && res.Body != nil {
		defer res.Body.Close()
	}
	if err != nil {
		yield(nil, p.apiError(ctx, res, err))
		return
	}
	events := sse.NewDecoder(res.Body)
	var (
		pending  *provider.Chunk      // the last Done chunk, not yet yielded
		finished = map[int]bool{}     // choice index → finish_reason seen
		refusals = map[int][]byte{}   // choice index → refusal text
		filters  = map[int][]string{} // choice index → categories filtered
		reasons  = map[int]string{}   // choice index → finish_reason
		u        wireUsage            // the last usage reported
		counted  bool                 // whether any usage was reported
		model    string               // the last model named
		id       string               // the last response id said
		c        chunk                // the event read last
		budget   = limit.NewBudget(p.cfg.Name, p.max)
	)
	emit := func(c *provider.Chunk) bool {
		if pending != nil {
			if !yield(pending, nil) {
				return false
			}
			pending = nil
		}
		if c.Done {
			pending = c
			return true
		}
		return yield(c, nil)
	}
	// stopErr returns the error of the choices refused or filtered so
	// far, nil when there are none.
	stopErr := func() error {
		var (
			refusal *RefusalError
			filter  *FilterError
		)
		refused := slices.Sorted(maps.Keys(refusals))
		if len(refused) > 0 {
			i := refused[0]
			refusal = &RefusalError{Index: i, Message: string(refusals[i])}
		}
		for _, i := range slices.Sorted(maps.Keys(reasons)) {
			if reasons[i] != finishFiltered {
				continue
			}
			refused = append(refused, i)
			if filter == nil {
				cats := filters[i]
				slices.Sort(cats)
				filter = &FilterError{Index: i, Categories: cats}
			}
		}
		return stopError(refusal, filter, refused)
	}
	// fail yields what was held back, with the usage when the server
	// reported any (OpenAI only in the last chunk, with
	// stream_options.include_usage; some compatible servers in every
	// chunk), then err, with the choices refused or filtered before it,
	// which are no more an answer than on a stream that ended well.
	fail := func(err error) {
		err = stops.After(err, stopErr())
		if counted {
			total := usage(u)
			if pending == nil {
				pending = &provider.Chunk{}
			}
			pending.Usage, pending.Model, pending.ResponseID = &total, model, id
		}
		if pending != nil && !yield(pending, nil) {
			return
		}
		yield(nil, err)
	}
	// answered reports whether every choice ended well: each had its
	// finish_reason "stop" and none was refused. A cut after that took
	// nothing of the answer.
	answered := func() bool {
		for i := range finished {
			if reasons[i] != "stop" || len(refusals[i]) > 0 {
				return false
			}
		}
		return len(finished) > 0
	}
	var streamErr error
	for events.Next() {
		if err := ctx.Err(); err != nil {
			fail(err)
			return
		}
		ev := ssestream.Event{Type: events.Event().Type, Data: events.Event().Data}
		if ev.Type == "error" {
			// An error event, or an error line (see package sse),
			// whatever its data: as the SDK's stream reports one.
			streamErr = &ssestream.StreamError{Message: "an error event without a message", Event: ev}
			break
		}
		if bytes.HasPrefix(ev.Data, []byte("[DONE]")) {
			break
		}
		if err := decodeChunk(ev, &c); err != nil {
			streamErr = err
			break
		}
		if c.Usage != nil {
			u, counted = *c.Usage, true
		}
		if c.Model != "" {
			model = c.Model
		}
		if c.ID != "" {
			id = c.ID
		}
		for _, ch := range c.Choices {
			i := int(ch.Index)
			if _, ok := finished[i]; !ok {
				finished[i] = false
			}
			if ch.Delta.Refusal != "" {
				refusals[i] = append(refusals[i], ch.Delta.Refusal...)
			}
			// Azure marks the categories on the chunk that ends the
			// choice, or, filtering asynchronously, on one after it.
			for _, cat := range filtered(ch.ContentFilterResults) {
				if !slices.Contains(filters[i], cat) {
					filters[i] = append(filters[i], cat)
				}
			}
			chunk := &provider.Chunk{
				Index:    i,
				Text:     ch.Delta.Content,
				Thinking: cmp.Or(ch.Delta.ReasoningContent, ch.Delta.Reasoning),
			}
			if ch.FinishReason != "" && !finished[i] { // a repeated finish_reason is ignored
				chunk.Done, chunk.FinishReason = true, ch.FinishReason
				finished[i] = true
				reasons[i] = ch.FinishReason
			}
			if chunk.Text == "" && chunk.Thinking == "" && !chunk.Done {
				continue
			}
			if err := budget.Spend(chunk); err != nil {
				fail(err)
				return
			}
			if !emit(chunk) {
				return
			}
		}
	}
	if err := ctx.Err(); err != nil {
		fail(err)
		return
	}
	broke := false // whether reading the body failed: the connection broke
	if streamErr == nil {
		streamErr = events.Err()
		broke = streamErr != nil
	}
	if err := streamErr; err != nil {
		if own := limit.Own(err); own != nil {
			fail(own)
			return
		} else if _, ok := errors.AsType[*ssestream.StreamError](err); ok {
			fail(p.apiError(ctx, res, err))
			return
		} else if !broke || !answered() {
			fail(fmt.Errorf("%w: %s: %w", provider.ErrTruncated, p.cfg.Name, err))
			return
		}
		// Cut after every choice ended well: only what follows the
		// finish_reasons was lost, the usage chunk and [DONE].
	}
	if len(finished) == 0 {
		fail(fmt.Errorf("%w: %s: the stream ended without any choice", provider.ErrTruncated, p.cfg.Name))
		return
	}
	for _, i := range slices.Sorted(maps.Keys(finished)) {
		if !finished[i] {
			fail(fmt.Errorf("%w: %s: the stream ended before the finish_reason of choice %d", provider.ErrTruncated, p.cfg.Name, i))
			return
		}
	}
	total := usage(u)
	if pending == nil {
		pending = &provider.Chunk{}
	}
	pending.Usage, pending.Model, pending.ResponseID = &total, model, id
	// A stream that ended before [DONE] may have lost the usage chunk; a
	// compatible server that ignores stream_options.include_usage never
	// says it, and ends with [DONE] all the same: either way, the
	// usage is unknown.
	pending.UsageLost = !counted
	if !yield(pending, nil) {
		return
	}
	if err := stopErr(); err != nil {
		yield(nil, err)
	}
}

// usage normalises OpenAI's counts (see provider.Usage): prompt_tokens
// includes the cached tokens, and completion_tokens the reasoning tokens.
func usage(u wireUsage) provider.Usage {
	cached := int(u.PromptTokensDetails.CachedTokens)
	written := int(u.PromptTokensDetails.CacheWriteTokens)
	thinking := int(u.CompletionTokensDetails.ReasoningTokens)
	return provider.Usage{
		Input:      max(0, int(u.PromptTokens)-cached-written),
		Output:     max(0, int(u.CompletionTokens)-thinking),
		Thinking:   thinking,
		CacheRead:  cached,
		CacheWrite: written,
	}
}

// reasoning returns the visible reasoning in the fields the SDK does not
// know, or "".
func reasoning(extra map[string]respjson.Field) string {
	for _, name := range reasoningFields {
		// The SDK marks fields it has no type for as invalid; Raw still
		// holds their JSON.
		var s string
		if json.Unmarshal([]byte(extra[name].Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}
