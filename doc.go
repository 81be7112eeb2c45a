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
// names none, like http.DefaultServeMux. [Func] registers a Go function
// as a tool with its code; the model is offered the tools that the
// context's tool messages name ([message.Tool], [Registry.Offer]).
// docs/guide.md walks through it all, one runnable example a step.
//
// # Where each act lives
//
//   - Request (001): request.go, with compose.go (the solution schema),
//     handler.go (the Build handlers write to) and render.go.
//   - Tool (002): tool.go. Activity (003): activity.go. Latent (104): latent.go.
//   - Call (004): call.go; preparing and running one: execute.go.
//   - Data, Input, State (005, 006, 009): data.go; the log and its
//     merged views are package message, references package ref.
//   - Loop (010): loop.go; its calls and a plan's share scheduler.go.
//   - Plan (012): plan.go (running one), plan_graph.go (analysis and
//     validation), plan_mermaid.go (PlanGraph).
//   - Instancing (013): instancing.go. Delegate (014) and Ideators (103):
//     delegate.go, idea.go. Scopes (015): scopes.go. Meta (016): meta.go.
//     Advisor (017): advisor.go.
//   - Durable runs: durable.go; the stores are package store.
package agent
