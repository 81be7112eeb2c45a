package agent

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/schema"
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
	planIntro string   // the intro of the last plan rendered
	said      said     // what the data blocks rendered so far said of each kind
	plan      []string // the calls of the last plan rendered, compact: errors name theirs by place
	// updated is 1 + the index in messages of the last data update
	// rendered, of updatedID (0 for none): an update right after it
	// leaves its heading out.
	updated   int
	updatedID message.Identity
	compacted int // the estimated tokens of the messages the last compaction left, the schema aside
	rendered  int // the bytes of the rendered messages, kept as they are rendered
	Index     int
	// LLM holds the settings sent to the provider; handlers may change
	// them (a message may pick the model or the temperature).
	LLM *provider.Request
	// Registry is the registry of the Request.
	Registry *Registry

	messages []provider.Message
	props    ojson.Object // extra solution properties, in order of first appearance
	required []string
	tools    ojson.Object // tool name → LLM-facing tool schema, last definition wins
	// offered are the tools as the schema last composed offers them, in
	// the order of tools, and offeredDefs the definitions they refer to.
	offered     []json.RawMessage
	offeredDefs []schema.Def
	shapeNames  []string                  // tool names, as defined
	shapes      []*shaped                 // their definitions as given, with the schemas calls must meet
	shown       map[message.Identity]bool // the data identities rendered
	outputs     map[string]bool           // the calls whose outputs were rendered, compact (see shownCalls)
	failures    map[string]bool           // a call, compact, and an error its output shows, joined by a NUL (see errorText)
	rendering   Rendering                 // how data is rendered
	seen        *message.Log              // the messages handled so far (RenderCached)
	handled     int                       // the messages of Log handled
	// fresh: a message was handled whose rendering may change as the log
	// grows (one of a handler of the user's): each request then handles
	// the whole log.
	fresh bool
	// own holds what the handlers of the user's rendered, by the index of
	// the message in the log: a compaction renders it again as it was.
	own            map[int][]provider.Message
	folded         folded // what compactions folded of the log so far
	changed        bool   // a tool or a property changed since the schema was composed
	solutionChecks []func(solution json.RawMessage) error
	metaCheck      int // 1 + the index in solutionChecks of the meta check; 0 for none
	// metaKeep gives a solution's meta the keys of the latest meta its
	// schema left out (keepMeta); nil when it left none out.
	metaKeep func(solution json.RawMessage) json.RawMessage
	// advisorNotes is what the advisor blocks rendered so far said for
	// all advisors.
	advisorNotes advisorNotes

	toolsOnly bool     // render nothing: only the tools are wanted
	lazy      bool     // only plan: no tool offers an _output (see Config.lazy)
	instances []string // the instances of the data handled, in order: what a call's _instance may name
	// contextLen is Config.contextLen. instancesOpen is set once an
	// instance appeared after the context, in a call's output or after a
	// plan: _instance is then any string, checked against instances when
	// a call is prepared, since an enum that grew with each new instance
	// would change the composed schema, and the prompt cache behind it,
	// each time. The last two come from the log alone, so a run whose
	// context is an earlier run's log (a conversation's next turn) opens
	// it where that run did.
	contextLen    int
	instancesOpen bool

	advisors         []advisorDef    // the advisors that speak in the solution (on start, request or finish)
	planned          bool            // a plan was handled: a step has run, for start and finish advisors
	advice           json.RawMessage // the advisors property of the schema last composed; nil when none speaks
	adviceDefs       []schema.Def    // the definitions advice refers to
	advisorsOnDemand []advisorDef    // advisors reached through ConsultAdvisor
}

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
	b.messages = append(b.messages, provider.Message{Role: role, Text: text})
	b.rendered += len(text)
}

// Property adds (or replaces) a property of the solution object, placed
// before calls and output; required makes the model always write it.
func (b *Build) Property(name string, s json.RawMessage, required bool) {
	if !b.props.Has(name) && required {
		b.required = append(b.required, name)
	}
	b.props.Set(name, s)
	b.changed = true
}

// DefineTool adds a tool to the calls the model may make, replacing an
// earlier definition of the same name (the latest wins) where it stands.
// A tool offered again as it was changes nothing: the schema the model
// has seen stays, and so does the prompt cache behind it.
func (b *Build) DefineTool(name string, s json.RawMessage) {
	if b.tools.Has(name) && bytes.Equal(b.tools.Get(name), s) {
		return
	}
	b.tools.Set(name, s)
	b.changed = true
}

// Definition returns the definition of a tool as given, before it was
// shaped for the model, or nil. It is a copy: the run's calls keep theirs.
func (b *Build) Definition(name string) json.RawMessage {
	if sh := b.shape(name); sh != nil {
		return bytes.Clone(sh.def)
	}
	return nil
}

// Tools returns the names of the tools defined so far, in order.
func (b *Build) Tools() []string { return append([]string(nil), b.tools.Keys...) }
