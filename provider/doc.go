// Package provider defines the seam between a Request and an LLM: the
// [Provider] interface, the rendered [Request] it receives, the [Chunk]s it
// streams back, normalised [Usage], and middleware such as [Retry].
//
// Adapters live in sub-packages (openai, anthropic, gemini; openai also
// serves any OpenAI-compatible server such as Ollama or vLLM) and never
// import each other. provider/scripted is the test double.
//
// Tools are chosen by the model inside its structured output (the calls
// array of the composed schema), not through a provider's native
// tool-calling API, so a Provider only needs to produce JSON text that
// follows Request.Schema. Adapters use the provider's native JSON-schema
// structured output, adapting the schema to its dialect; the caller
// validates the answer against the full schema.
//
// An error that concerns some solutions only (a refusal, a content
// filter) is a [SolutionError]: it ends the stream after the chunks of
// every solution and names those it stopped, so that the others are kept.
package provider
