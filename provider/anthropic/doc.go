// Package anthropic is the [provider.Provider] for Anthropic's Messages API
// (Claude), built on the official SDK github.com/anthropics/anthropic-sdk-go.
//
//	p, err := anthropic.New(anthropic.Config{}) // ANTHROPIC_API_KEY from the environment
//	if err != nil { … }
//	r, err := provider.Collect(provider.Retry(p, provider.RetryConfig{}).Generate(ctx, req))
//
// The SDK's own retries are off: wrap the Provider in [provider.Retry].
//
// # Structured output
//
// A Request with a Schema is sent with native structured outputs, the
// generally available output_config.format = {type: "json_schema", schema}
// of the Messages API, which needs no beta header. The schema sent is
// schema.Adapt(req.Schema, schema.Anthropic), with its property order kept;
// the caller still validates the answer against the full schema. The
// solution is the text of the answer.
//
// With [Config.ToolOutput], for models without structured outputs, the
// adapted schema is instead the input_schema of one tool named
// Request.SchemaName ("solution" when empty), forced with tool_choice
// {type: "tool"}; the solution is that tool's input, streamed from its
// input_json_delta pieces, and text blocks before it are dropped. The API
// refuses a forced tool while thinking is on, so with Request.Thinking > 0
// the tool choice is "auto", and the model may then answer in text without
// the tool: that text is then the solution, for the caller to validate. As
// it is known to be the solution only when the answer ends, a stream holds
// text back until then.
//
// A Request without a Schema asks for free text.
//
// # Messages
//
// The system messages that start the conversation go, in order, to the
// system parameter, each as one text block. A system message after the
// conversation began stays where it stands, as a user text block wrapped
// in <system> tags: moved into system, it would change the start of a
// prefix the model has read, and the request would miss the cache from
// there on. Consecutive messages of the same role are merged into one
// message of several text blocks, since the API wants the roles to
// alternate. The Request is never modified.
//
// # Prompt caching
//
// A request carries cache_control {type: "ephemeral"} breakpoints, at most
// the API's four: on the last block of the system parameter, on the forced
// tool with [Config.ToolOutput], and on the text blocks of the last two
// messages marked [provider.Message.Stable]. In a run, the one before the
// last is where the previous request ended its stable prefix, so its entry
// is read exactly however many blocks the step added; the API's own look
// back from a later breakpoint reaches only 20 blocks. A request with no
// Stable message has only the system and tool ones. The cache counts come
// back in [provider.Usage] (see Usage below).
//
// # Several solutions
//
// The API has no n: Request.N > 1 sends N identical requests concurrently.
// For a prompt the cache can keep (a body of 4 KB or more with a cache
// breakpoint), the others follow the first once its response begins, as
// the API makes a cache entry available only then: they read the prompt
// from the cache instead of each writing it (a plain request is then
// streamed on the wire, and gathered).
// Their chunks reach the caller on its own goroutine solution by solution,
// in Index order: solution 0 streams live while the chunks of the others
// wait in a buffer until their turn, so the order never depends on which
// request was faster. The last chunk of the stream carries usage: the
// sum over the N requests. Breaking out of the stream cancels them all,
// and the stream returns only after all of them stopped. An error in one
// request cancels only those whose response has not begun: those
// streaming are paid for, and go on to their end. The first error ends the
// stream, after the text of every solution.
//
// # Thinking and max_tokens
//
// Request.Thinking > 0 sends thinking {type: "enabled", budget_tokens} with
// a budget of at least [MinThinkingBudget]; a negative Thinking sends
// {type: "disabled"}, and 0 leaves the model's default. The API counts
// thinking in max_tokens and wants it above the budget, so max_tokens is the
// budget plus the answer's bound (Request.MaxTokens, else Config.MaxTokens,
// else [DefaultMaxTokens]). Thinking text arrives in Chunk.Thinking,
// streamed from thinking_delta events or whole from the thinking blocks of
// a plain answer. Note that the API refuses a Temperature with thinking on,
// and that the SDK warns on stderr for models where "enabled" thinking is
// deprecated in favour of "adaptive".
//
// A plain (non-streamed) Request whose max_tokens the SDK deems too long for
// one HTTP response (it might take over ten minutes) is streamed on the wire
// and gathered into one chunk per solution.
//
// # Usage
//
// [provider.Usage] is filled from the API's usage: Input is input_tokens,
// which already excludes the cache; CacheRead is cache_read_input_tokens;
// CacheWrite is cache_creation_input_tokens. output_tokens includes the
// thinking, so Thinking is output_tokens_details.thinking_tokens and Output
// is output_tokens less it; when the API does not break thinking out,
// Thinking is 0 and Output is all of output_tokens. In a stream, the counts
// of message_start are updated by the cumulative ones of message_delta; a
// stream that fails after message_start yields those counts on a chunk
// before its error, since the API bills a request whose stream began.
//
// Chunk.FinishReason is the API's stop_reason as sent: "end_turn",
// "max_tokens", "stop_sequence", "tool_use", "refusal", …
//
// # Stopped answers
//
// An answer cut at max_tokens is no error here: its finish reason lets the
// caller report it as cut. A forced tool's input cut so is what arrived of
// it: streamed, its partial_json; whole, the parameters the model finished,
// which the API sends as a closed object, without its closing brace, so that
// it reads as cut too and is never taken for a whole answer. Streamed with
// no partial_json, the input is the {} of content_block_start, which a
// schema may accept: it goes without its brace too, at max_tokens or when
// the stream ends before message_stop. One that a refusal stopped
// ([StopRefusal], with the category and explanation of stop_details) or that
// filled the model's context window ([StopContextWindow]) keeps its chunks,
// and the stream then ends with a *[StopError]: asked again, the same
// conversation is refused again, or has even less room.
//
// # Errors
//
// An error response becomes a *[provider.Error] with Provider "anthropic",
// the HTTP status, Code the error's type ("rate_limit_error",
// "overloaded_error", …), Err its message, and RetryAfter from the
// retry-after header, or, for a 429 without one, from the
// anthropic-ratelimit-*-reset of the limits used up. An error event inside a stream, sent after a 200
// status, becomes one too, with the status that goes with its type (529 for
// overloaded_error, 500 for an unknown type). A stream that ends without
// message_stop, or whose connection breaks, yields the text received so far
// and then an error wrapping [provider.ErrTruncated], unless message_delta
// had said the answer ended well (end_turn, stop_sequence, tool_use): then
// only message_stop was lost, and the stream ends as at it. When ctx ends, the
// stream ends with ctx.Err().
package anthropic
