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
// Handlers, tool definitions and schemas live in a [Registry];
// [DefaultRegistry] holds the built-in handlers and is used when a Config
// names none, like http.DefaultServeMux.
package agent
