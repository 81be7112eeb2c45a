package agent

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
)

// Handler turns messages of one type into what a Request sends: rendered
// messages, properties of the composed schema and LLM settings, all
// through the [Build]. Handle is called once per message of its type, in
// context order, on the goroutine of the Request; it must not keep b or m.
type Handler interface {
	Handle(ctx context.Context, b *Build, m *message.Message) error
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, b *Build, m *message.Message) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, b *Build, m *message.Message) error {
	return f(ctx, b, m)
}

// Build collects what the handlers contribute to one Request.
type Build struct {
	// Log is the whole context; views such as merged data come from it.
	Log *message.Log
	// Index is the position of the message being handled.
	Index int
	// LLM holds the settings sent to the provider; handlers may change
	// them (a message may pick the model or the temperature).
	LLM *provider.Request
	// Registry is the registry of the Request.
	Registry *Registry

	messages       []provider.Message
	props          ojson.Object // extra solution properties, in order of first appearance
	required       []string
	tools          ojson.Object // tool name → LLM-facing tool schema, last definition wins
	shapeNames     []string     // tool names, as defined
	shapes         []*shaped    // their definitions as given, with the schemas calls must meet
	shown          shown        // the data identities rendered
	solutionChecks []func(solution json.RawMessage) error

	toolsOnly bool // render nothing: only the tools are wanted

	// A loop carries the Build from step to step (see prepared.extend):
	carry bool // keep where data blocks were rendered (see shown)
	gen   int  // bumped at every change of what compose reads

	// shared: props, tools and shapes are those of the Build this one was
	// forked from (see fork), to be copied before a write in place.
	shared bool

	advisorItems     []json.RawMessage // the active advisors' entry schemas
	advisorsOnDemand []string          // ids of advisors reached through ConsultAdvisor
}

// block is a rendered data block: its position among the rendered messages
// and the index of the message that first named its identity.
type block struct{ msg, index int }

// Check adds a check every solution must pass after schema validation; a
// failing solution is re-asked with the error shown to the model.
func (b *Build) Check(f func(solution json.RawMessage) error) {
	b.solutionChecks = append(b.solutionChecks, f)
}

// Render appends a rendered message.
func (b *Build) Render(role provider.Role, text string) {
	if b.toolsOnly {
		return
	}
	if len(b.messages) == cap(b.messages) {
		// A step renders a few messages past a fork's clipped list: make
		// room for them at once rather than grow it for each.
		b.messages = slices.Grow(b.messages, 4)
	}
	b.messages = append(b.messages, provider.Message{Role: role, Text: text})
}

// Property adds (or replaces) a property of the solution object, placed
// before calls and output; required makes the model always write it.
func (b *Build) Property(name string, s json.RawMessage, required bool) {
	b.own()
	if !b.props.Has(name) && required {
		b.required = append(b.required, name)
	}
	b.props.Set(name, s)
	b.gen++
}

// DefineTool adds a tool to the calls the model may make, replacing an
// earlier definition of the same name (the latest wins).
func (b *Build) DefineTool(name string, s json.RawMessage) {
	b.own()
	b.tools.Delete(name)
	b.tools.Set(name, s)
	b.gen++
}

// fork returns a Build for log in the state of b, which does not change
// after: the two share their slices, clipped so that an append copies,
// until a write in place makes the fork copy them (own). Maps are small
// and copied now.
func (b *Build) fork(log *message.Log) *Build {
	f := *b
	f.Log = log
	llm := *b.LLM
	f.LLM = &llm
	f.messages = slices.Clip(b.messages)
	f.props = ojson.Object{Keys: slices.Clip(b.props.Keys), Values: slices.Clip(b.props.Values)}
	f.tools = ojson.Object{Keys: slices.Clip(b.tools.Keys), Values: slices.Clip(b.tools.Values)}
	f.required = slices.Clip(b.required)
	f.shapeNames, f.shapes = slices.Clip(b.shapeNames), slices.Clip(b.shapes)
	f.solutionChecks = slices.Clip(b.solutionChecks)
	f.advisorItems, f.advisorsOnDemand = slices.Clip(b.advisorItems), slices.Clip(b.advisorsOnDemand)
	f.shown = b.shown.fork()
	f.shared = true
	return &f
}

// own copies what b shares with the Build it was forked from and writes
// in place.
func (b *Build) own() {
	if !b.shared {
		return
	}
	b.shared = false
	b.props = ojson.Object{Keys: slices.Clone(b.props.Keys), Values: slices.Clone(b.props.Values)}
	b.tools = ojson.Object{Keys: slices.Clone(b.tools.Keys), Values: slices.Clone(b.tools.Values)}
	b.shapes = slices.Clone(b.shapes)
}

// Definition returns the definition of a tool as given, before it was
// shaped for the model, or nil.
func (b *Build) Definition(name string) json.RawMessage {
	if sh := b.shape(name); sh != nil {
		return sh.def
	}
	return nil
}

// Tools returns the names of the tools defined so far, in order.
func (b *Build) Tools() []string { return append([]string(nil), b.tools.Keys...) }
