package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"unicode"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/internal/sse"
	"github.com/augceo/agent/provider/internal/stops"
)

// solution sends the call's request once and yields the chunks of solution
// i; its last chunk is Done and carries the usage of this one request, and
// the model that answered it.
// began, when not nil, is called once the response begins (of a stream,
// at its first event).
func (c *call) solution(ctx context.Context, i int, began func()) iter.Seq2[*provider.Chunk, error] {
	switch {
	case !c.sse:
		return c.message(ctx, i)
	case c.stream:
		return c.events(ctx, i, began)
	default:
		return gather(c.events(ctx, i, began), i)
	}
}

// message sends a plain request and yields its one chunk, then a
// *StopError when the API stopped it (see [StopError]).
func (c *call) message(ctx context.Context, i int) iter.Seq2[*provider.Chunk, error] {
	return func(yield func(*provider.Chunk, error) bool) {
		msg, err := c.p.client.Messages.New(ctx, c.params, option.WithRequestBody("application/json", c.body))
		if err != nil {
			yield(nil, convertErr(ctx, err))
			return
		}
		chunk := &provider.Chunk{Index: i, Done: true, FinishReason: string(msg.StopReason)}
		var text, thinking, input strings.Builder
		used := false // whether the tool was used
		for _, b := range msg.Content {
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
			case "thinking":
				thinking.WriteString(b.Thinking)
			case "tool_use":
				if c.tool != "" && b.Name == c.tool && !used {
					used = true
					input.Write(b.Input)
				}
			}
		}
		chunk.Text, chunk.Thinking = text.String(), thinking.String()
		if used {
			chunk.Text = input.String()
			if msg.StopReason == sdk.StopReasonMaxTokens {
				chunk.Text = cutInput(chunk.Text)
			}
		}
		u := usageOf(msg.Usage).usage()
		chunk.Usage, chunk.Model, chunk.ResponseID = &u, string(msg.Model), msg.ID
		if !yield(chunk, nil) {
			return
		}
		if stop := stopped(i, string(msg.StopReason), string(msg.StopDetails.Category), msg.StopDetails.Explanation); stop != nil {
			yield(nil, stop)
		}
	}
}

// cutInput returns the input of a forced tool that max_tokens cut, as a
// whole answer sends it, without its closing brace. The API sends only the
// parameters the model finished, in a closed object that may pass the
// schema; without the brace it reads as cut, as the partial_json of a
// stream does, so that the caller never takes it for a whole answer.
func cutInput(input string) string {
	return strings.TrimSuffix(strings.TrimRightFunc(input, unicode.IsSpace), "}")
}

// events sends a streamed request and yields a chunk per piece of text or
// thinking, then a Done chunk at message_stop, and after it a *StopError
// when the API stopped the answer (see [StopError]).
//
// The SDK's client posts the body, which ends with "stream": true as
// NewStreaming would send it (NewStreaming would also parse and rewrite
// the body to add it, and set up a stream that decodes each event into the
// SDK's types). The events of the response are read by package sse,
// which also reads the error lines that proxies write without "data:",
// and decoded by decodeEvent (see there). What the SDK's stream does
// before decoding is done here too: ping events, events without data
// and unnamed events are skipped, and an error event ends the stream;
// so does an unnamed event whose data is an error.
func (c *call) events(ctx context.Context, i int, began func()) iter.Seq2[*provider.Chunk, error] {
	return func(yield func(*provider.Chunk, error) bool) {
		var res *http.Response
		postErr := c.p.client.Post(ctx, "v1/messages", nil, &res, option.WithRequestBody("application/json", c.body))
		if res != nil && res.Body != nil {
			defer res.Body.Close()
		}
		if postErr != nil {
			yield(nil, convertErr(ctx, postErr))
			return
		}
		events := sse.NewDecoder(res.Body)
		var (
			started    bool // whether an event arrived
			counted    bool // whether message_start said the usage
			usage      tokens
			model      string // message_start's
			id         string // message_start's
			stopReason string
			stop       *StopError      // what the stop_reason and stop_details say
			toolBlock  = int64(-1)     // index of the forced tool's content block
			toolInput  any             // its input at content_block_start
			toolText   bool            // whether input_json_delta arrived for it
			toolStart  string          // toolInput as JSON, when its block ended with no delta
			held       strings.Builder // text in tool mode: the solution if the tool is not used
			err        error           // what ended the events
			ev         event           // the event read last
		)
		// fail yields the usage counted so far, then err: the API bills
		// the input of a request whose stream began (message_start), and
		// the output until the failure (message_delta's, the last said).
		// A stop_reason said before the failure goes with it: the answer
		// is no more a solution than if message_stop had come.
		fail := func(err error) {
			if stop != nil {
				err = stops.After(err, stop)
			}
			if counted {
				u := usage.usage()
				if !yield(&provider.Chunk{Index: i, Usage: &u, Model: model, ResponseID: id}, nil) {
					return
				}
			}
			yield(nil, err)
		}
		piece := func(text, thinking string) bool {
			if text == "" && thinking == "" {
				return true
			}
			chunk := &provider.Chunk{Index: i, Text: text, Thinking: thinking}
			if err := c.budget.Spend(chunk); err != nil {
				fail(err)
				return false
			}
			return yield(chunk, nil)
		}
		// text is a piece of a text block: the solution in text mode; in
		// tool mode, held until the tool is used (then dropped) or the
		// answer ends without it (then the solution, as with thinking on
		// the tool choice is "auto" and the model may answer in text).
		text := func(s string) bool {
			switch {
			case c.tool == "":
				return piece(s, "")
			case toolBlock < 0 && s != "":
				if err := c.budget.Spend(&provider.Chunk{Text: s}); err != nil {
					fail(err)
					return false
				}
				held.WriteString(s)
			}
			return true
		}
		// unheld yields the held text, when the tool was not used, or the
		// tool's input that arrived with no delta: cut at max_tokens, or
		// when the stream ended before message_stop, it is without its
		// closing brace, as a whole answer's is (see cutInput). The
		// content_block_start of a tool always has an input, {} when no
		// delta follows, and only the stop_reason after it tells it whole.
		unheld := func(cut bool) bool {
			if toolStart != "" {
				s := toolStart
				if cut {
					s = cutInput(s)
				}
				return piece(s, "")
			}
			if toolBlock >= 0 || held.Len() == 0 {
				return true
			}
			return yield(&provider.Chunk{Index: i, Text: held.String()}, nil)
		}
		// end yields the Done chunk, with the usage, as message_stop
		// calls for, then the stop's error, if any.
		end := func() {
			if !unheld(stopReason == string(sdk.StopReasonMaxTokens)) {
				return
			}
			u := usage.usage()
			if yield(&provider.Chunk{Index: i, Done: true, FinishReason: stopReason, Usage: &u, Model: model, ResponseID: id}, nil) && stop != nil {
				yield(nil, stop)
			}
		}
	read:
		for events.Next() {
			data := events.Event().Data
			switch events.Event().Type {
			case "ping":
				continue
			case "":
				// The API names every event; a proxy may not, even
				// for an error, which then must not be skipped.
				if !errorData(data) {
					continue
				}
				err = streamError(res, data)
				break read
			case "error":
				err = streamError(res, data)
				break read
			}
			if len(bytes.TrimSuffix(data, []byte("\n"))) == 0 {
				continue
			}
			if err = decodeEvent(data, &ev); err != nil {
				break
			}
			if !started && began != nil {
				began()
			}
			started = true
			switch ev.Type {
			case "message_start":
				usage, model, id = tokens{}, ev.Message.Model, ev.Message.ID
				usage.merge(ev.Message.Usage)
				counted = true
			case "content_block_start":
				b := ev.ContentBlock
				ok := true
				switch b.Type {
				case "text":
					ok = text(b.Text)
				case "thinking":
					ok = piece("", b.Thinking)
				case "tool_use":
					if c.tool != "" && b.Name == c.tool && toolBlock < 0 {
						toolBlock, toolInput = ev.Index, b.Input
					}
				}
				if !ok {
					return
				}
			case "content_block_delta":
				d := ev.Delta
				ok := true
				switch d.Type {
				case "text_delta":
					ok = text(d.Text)
				case "thinking_delta":
					ok = piece("", d.Thinking)
				case "input_json_delta":
					if ev.Index == toolBlock && d.PartialJSON != "" {
						toolText = true
						ok = piece(d.PartialJSON, "")
					}
				}
				if !ok {
					return
				}
			case "content_block_stop":
				// A tool input that arrived whole, with no delta, is still
				// the solution, once the stop_reason says how it ended.
				if ev.Index == toolBlock && !toolText && toolInput != nil {
					if b, err := json.Marshal(toolInput); err == nil {
						toolStart = string(b)
					}
				}
			case "message_delta":
				stopReason = ev.Delta.StopReason
				sd := ev.Delta.StopDetails
				stop = stopped(i, stopReason, sd.Category, sd.Explanation)
				usage.merge(ev.Usage)
			case "message_stop":
				end()
				return
			}
		}
		broke := false // whether reading the body failed: the connection broke
		if err == nil {
			err = events.Err()
			broke = err != nil
		}
		if err != nil {
			if started {
				err = convertStreamErr(ctx, err)
			} else {
				err = convertErr(ctx, err)
			}
		} else if cerr := ctx.Err(); cerr != nil {
			err = cerr
		} else {
			err = fmt.Errorf("anthropic: %w: no message_stop", provider.ErrTruncated)
			broke = true
		}
		if broke && errors.Is(err, provider.ErrTruncated) && endedWell(stopReason) {
			// The stream broke after message_delta said the answer
			// ended, with its usage: only message_stop was lost.
			end()
			return
		}
		if !unheld(true) {
			return
		}
		fail(err)
	}
}

// endedWell reports whether a message_delta's stop_reason says that the
// answer ended as asked: not at max_tokens, not refused or stopped.
func endedWell(stopReason string) bool {
	switch stopReason {
	case string(sdk.StopReasonEndTurn), string(sdk.StopReasonStopSequence), string(sdk.StopReasonToolUse):
		return true
	}
	return false
}

// gather turns the stream of solution i into its one chunk. On an error it
// yields what arrived before it, then the error; an error after the Done
// chunk (a *StopError) follows that chunk.
func gather(seq iter.Seq2[*provider.Chunk, error], i int) iter.Seq2[*provider.Chunk, error] {
	return func(yield func(*provider.Chunk, error) bool) {
		var text, thinking strings.Builder
		var usage *provider.Usage // of a stream that failed (see fail in events)
		var model, id string
		done := false
		for chunk, err := range seq {
			if err != nil {
				if !done && (text.Len() > 0 || thinking.Len() > 0 || usage != nil) {
					if !yield(&provider.Chunk{Index: i, Text: text.String(), Thinking: thinking.String(), Usage: usage, Model: model, ResponseID: id}, nil) {
						return
					}
				}
				yield(nil, err)
				return
			}
			if !chunk.Done && chunk.Usage != nil {
				usage, model, id = chunk.Usage, chunk.Model, chunk.ResponseID
			}
			text.WriteString(chunk.Text)
			thinking.WriteString(chunk.Thinking)
			if chunk.Done {
				chunk.Text, chunk.Thinking = text.String(), thinking.String()
				if !yield(chunk, nil) {
					return
				}
				done = true
			}
		}
	}
}
