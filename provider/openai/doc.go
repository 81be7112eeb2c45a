// Package openai is the provider.Provider for OpenAI's Chat Completions API
// and for the servers that speak it: Ollama, vLLM, LM Studio, and others,
// reached by [Config.BaseURL]. It uses the official SDK,
// github.com/openai/openai-go/v3, with the SDK's own retries turned off:
// wrap the [Provider] in provider.Retry.
//
//	p, err := openai.New(openai.Config{Model: "gpt-5-mini"}) // key from OPENAI_API_KEY
//	local, err := openai.New(openai.Config{
//		Name:    "ollama",
//		BaseURL: "http://localhost:11434/v1", // no key needed
//		Model:   "qwen3",
//	})
//
// # Requests
//
// A provider.Request becomes one POST /chat/completions:
//
//   - messages: the rendered messages with their roles (system, user,
//     assistant).
//   - response_format: {"type":"json_schema","json_schema":{"name":
//     Request.SchemaName (default "solution"), "schema": the schema adapted
//     with schema.Adapt(req.Schema, schema.OpenAI), "strict":true}}. The
//     adapted schema makes every property required (optional ones become
//     nullable) and drops unsupported keywords, so the caller validates the
//     answer against the original schema. With [Config.JSONMode], for
//     servers without strict structured outputs, it is {"type":
//     "json_object"} and the unadapted schema is appended to the system
//     message. A nil Request.Schema asks for free text.
//   - n when Request.N > 1 (servers that ignore n, such as Ollama, return
//     one choice; agent.Request asks again for the rest), temperature,
//     and max_completion_tokens (max_tokens with [Config.LegacyMaxTokens]).
//   - reasoning_effort from the thinking budget: 0 leaves it unset; a
//     negative budget sends [Config.ThinkingOff] ("minimal" by default,
//     "none" for GPT-5.1 and later); 1 to [LowEffortMax] (2048) tokens
//     "low"; up to [MediumEffortMax] (8192) "medium"; above that "high".
//   - stream: true and stream_options {"include_usage":true} when
//     Request.Stream is set.
//   - prompt_cache_key: Request.CacheKey, when not empty, unless
//     [Config.NoPromptCacheKey]. OpenAI caches prompt prefixes by itself;
//     the key routes the requests that share one to the same cache.
//     Message.Stable changes nothing: there are no breakpoints to place.
//
// # Answers
//
// A plain answer yields one Done chunk per choice, in index order, with the
// usage on the last. A stream yields each content delta as it arrives,
// tagged with its choice index, and a Done chunk with the finish_reason of
// each choice; the last Done chunk is held until the stream ends so that it
// carries the usage (which OpenAI sends after every finish_reason). A
// stream cut before that usage says none (a compatible server that sends
// it in every chunk has the last one yielded before the error).
//
// OpenAI does not expose its models' reasoning, but compatible servers do:
// reasoning_content (DeepSeek, older vLLM) or reasoning (Ollama, newer
// vLLM) in the message or delta become Chunk.Thinking.
//
// Usage is normalised as provider.Usage says: Input is prompt_tokens minus
// prompt_tokens_details.cached_tokens (and minus cache_write_tokens when
// the server reports them), CacheRead the cached tokens, CacheWrite the
// cache_write_tokens, Thinking completion_tokens_details.reasoning_tokens
// and Output the rest of completion_tokens.
//
// # Errors
//
// An error response becomes a *provider.Error with the HTTP status, the
// API's code (or its type when there is no code), the Retry-After delay
// (from retry-after-ms or Retry-After) and the API's message as Err. An
// error event inside a stream is a *provider.Error whose Status is that of
// its code or type (server_error is 500), so that provider.Retry retries
// one that comes before any chunk. A failed
// connection is a *provider.Error with Status 0 and the transport error.
// When ctx ends, the stream ends with ctx.Err(). A stream that stops before
// a choice's finish_reason, cleanly or not, ends with an error wrapping
// provider.ErrTruncated, after the text that had arrived; one that breaks
// after every choice's finish_reason "stop" ends well, with UsageLost on
// its last chunk when the usage chunk did not come. So does a stream of a
// compatible server that ignores stream_options.include_usage, and a
// whole answer without usage: the usage is not known. A refusal ends
// the stream with a *[RefusalError] after the other chunks, and a choice a
// content filter stopped (finish_reason "content_filter") with a
// *[FilterError] that gives the categories Azure OpenAI marks filtered.
// A choice cut at the token limit ("length") is no error here: its finish
// reason lets the caller report it as cut.
package openai
