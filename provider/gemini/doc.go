// Package gemini is the provider.Provider for Google's Gemini API (the
// generativelanguage.googleapis.com backend that AI Studio keys use), built
// on the official SDK google.golang.org/genai.
//
//	p, err := gemini.New(gemini.Config{Model: "gemini-2.5-flash"}) // key from GEMINI_API_KEY
//	...
//	res, err := provider.Collect(p.Generate(ctx, req))
//
// Each Generate sends one request: models/{model}:generateContent, or
// :streamGenerateContent?alt=sse when the request streams; a second only
// when the model refused candidateCount (see Request). The SDK's own
// retries stay off and so does its automatic continuation (which resends a
// request with a continuation token); wrap the Provider in provider.Retry
// to retry rate limits and server errors.
//
// # Request
//
// The system messages that start the conversation become
// systemInstruction, one part each and in order. A system message after the
// conversation began stays where it stands, as a user part whose text is
// wrapped in <system> tags: moved into systemInstruction, it would change
// the start of a prefix the model has read, and miss the implicit cache
// from there on. User and assistant messages become
// contents with the roles "user" and "model"; consecutive messages of one
// role are parts of one content, and empty messages are left out (the API
// rejects empty parts). N is candidateCount (a model that refuses it
// above 1, as Gemini 3 models do, is asked again for one candidate, and
// sent none after that), Temperature is temperature,
// MaxTokens is maxOutputTokens. A positive Thinking is thinkingConfig
// {thinkingBudget: Thinking, includeThoughts: true}; a negative one is
// {thinkingBudget: 0}, which turns thinking off on models that allow it
// (Gemini 2.5 Pro does not, and answers 400); 0 sends no thinkingConfig,
// leaving the model's default, whose thoughts are then not returned.
//
// # Schema
//
// With a Schema, responseMimeType is application/json and the schema goes in
// one of two fields of generationConfig:
//
//   - responseJsonSchema, by default: JSON Schema itself, which Gemini 2.5
//     and later models take. Gemini documents a keyword subset for this
//     field ($defs, $ref, anyOf, oneOf, enum of strings and numbers, items,
//     properties, required, additionalProperties, minimum, maximum,
//     minItems, maxItems, propertyOrdering, ...), so the schema is adapted
//     to it with schema.Adapt(req.Schema, schema.GeminiJSON): a "const"
//     (the _tool of each call) becomes a one-value enum, "nullable" becomes
//     a type union, a $ref with siblings is wrapped in an anyOf, a required
//     property that refers to a recursive definition gets a copy of it,
//     and what the subset lacks
//     (pattern, minLength, ...) is described to the model and checked by
//     the local validation. Its refs keep the definitions the calls share
//     (_outputPath, _reference, ...) once: the composed schema of ten tools
//     is 4.1 KB here, against 10.2 KB in responseSchema. No object gets a
//     "propertyOrdering": the models that take this field write properties
//     in the order of the schema's keys, which the adapted schema keeps.
//   - responseSchema, with [Config.ResponseSchema], for older models:
//     Gemini's OpenAPI 3.0 subset, produced by schema.Adapt(req.Schema,
//     schema.Gemini). A "const" becomes a one-value enum, nullable unions
//     become "nullable", refs are inlined, and each object gets
//     "propertyOrdering", without which the model writes properties
//     alphabetically. Dropped constraints are described to the model, and
//     the caller validates the answer against the full schema anyway. A
//     schema the subset cannot express (schema.ErrUnsupported,
//     schema.ErrRecursive: recursive schemas, free-form objects) goes in
//     responseJsonSchema all the same.
//
// The SDK rebuilds its request body from a map, which sorts object keys; the
// schema (and the temperature, which it would widen from float32) is
// inserted into the body as raw JSON, so the bytes sent are the adapted
// schema with its properties in order.
//
// # Answer
//
// Text parts of a candidate become Chunk.Text and parts marked "thought"
// become Chunk.Thinking, under Chunk.Index = the candidate's index. The
// chunk that carries a candidate's finishReason is Done; the reasons read
// "stop" (STOP), "length" (MAX_TOKENS), "content_filter" (SAFETY,
// RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII and the image ones), or
// the reason in lower case ("other", "malformed_function_call",
// "continuation" for an answer the API paused, whose text is incomplete). In
// a stream, the chunk that finishes a candidate goes out when the next chunk
// or the end arrives, so that the last chunk can carry the usage, which the
// API completes in its final event. A stream that ends while a candidate
// has no finishReason (or that breaks) yields the text received so far,
// with the latest usageMetadata when an event had one, then an error
// wrapping provider.ErrTruncated; one that breaks after every candidate's
// finishReason STOP ends well. A prompt the API blocks
// (promptFeedback.blockReason, no candidates) is a *[BlockedError], which
// wraps [ErrNoCandidates]. A candidate stopped for any reason but STOP,
// MAX_TOKENS and CONTINUATION (a safety or recitation filter, LANGUAGE,
// OTHER, a malformed function call, ...) keeps its chunks, its text cut or
// empty, and the stream then ends with a *[FinishError] that gives the
// reason and the harm categories that blocked it. An answer cut by
// MAX_TOKENS is no error here: its finish reason "length" lets the caller
// report it as cut.
//
// Usage is normalised: Input is promptTokenCount − cachedContentTokenCount
// (+ toolUsePromptTokenCount), CacheRead is cachedContentTokenCount, Output
// is candidatesTokenCount and Thinking is thoughtsTokenCount. Gemini reports
// no cache writes.
//
// # Prompt caching
//
// Gemini caches repeated prompt prefixes implicitly, with nothing to mark
// in the request, so Message.Stable and Request.CacheKey are not sent. The
// body depends only on the request: contents keep the messages' order, the
// SDK writes object keys sorted, and systemInstruction, which the model
// reads before the contents, holds the system messages. A request that
// appends messages to an earlier one therefore repeats its prefix byte for
// byte and can hit the cache; cachedContentTokenCount comes back as
// Usage.CacheRead. The explicit cachedContents API is not used.
//
// # Errors
//
// An error answer of the API, as an HTTP status or as an error event inside
// a stream, is a *provider.Error with Provider "gemini", the status, Code the
// google.rpc status name ("RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", ...),
// Err the API's message, and RetryAfter from the Retry-After header or else
// from the retryDelay of a google.rpc.RetryInfo detail in the body. When ctx
// is done, Generate yields ctx.Err().
package gemini
