// Package agent runs Acts agents: schema-driven LLM requests whose context is
// a list of messages (see package message).
//
// A [Request] is one LLM invocation: every message of the context goes
// through the [Handler] registered for its type, which renders it for the
// model and contributes to the composed output schema ({calls, output, ...}
// with the user's schema as nullable output) and to the LLM settings. The
// answer is validated against the composed schema and re-asked with the
// errors shown to the model when it does not fit.
//
//	resp, err := agent.Request(ctx, agent.Config{Provider: p}, schema, msgs)
//
// [Run] is the agent loop (010): it repeats Requests until a solution has
// an output, running each solution's calls as they stream in: code
// [Activity] values bound to tools, or latent calls the model produces.
//
// Handlers, tools, activities and schemas live in a [Registry];
// [DefaultRegistry] holds the built-in handlers and is used when a Config
// names none, like http.DefaultServeMux.
package agent
