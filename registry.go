package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/schema"
)

// Registry holds the handlers of message types and the tool definitions a
// context can name. It is safe for concurrent use. A duplicate or malformed
// registration panics: it is a setup bug.
type Registry struct {
	mu       sync.RWMutex
	handlers map[message.Type]Handler
	builtin  map[message.Type]bool
	tools    map[string]json.RawMessage
	schemas  *schema.Registry

	activities map[string]Activity
	ideas      map[string]*Idea

	presets  map[string]Preset
	advisors map[string]registeredAdvisor
}

// NewRegistry returns a registry with the built-in handlers (text, data,
// tool, plan, meta, error, advisor) and no tools.
func NewRegistry() *Registry {
	r := &Registry{
		handlers: map[message.Type]Handler{},
		builtin:  map[message.Type]bool{},
		tools:    map[string]json.RawMessage{},
		schemas:  schema.NewRegistry(),
	}
	r.Handle(message.TypeText, HandlerFunc(renderText))
	r.Handle(message.TypeData, HandlerFunc(renderData))
	r.Handle(message.TypeTool, HandlerFunc(defineTools))
	r.Handle(message.TypePlan, HandlerFunc(renderPlan))
	r.Handle(message.TypeMeta, HandlerFunc(renderMeta))
	r.Handle(message.TypeError, HandlerFunc(renderError))
	r.Handle(message.TypeAdvisor, HandlerFunc(renderAdvisor))
	r.Handle(message.TypeCompaction, HandlerFunc(renderCompaction))
	r.Handle(message.TypePreset, HandlerFunc(applyPreset))
	for t := range r.handlers {
		r.builtin[t] = true
	}
	return r
}

// DefaultRegistry is used by a Config whose Registry is nil.
var DefaultRegistry = NewRegistry()

// Handle registers h for messages of type typ, replacing a built-in
// handler; registering a type twice otherwise panics.
func (r *Registry) Handle(typ message.Type, h Handler) {
	if typ == "" || h == nil {
		panic("agent: Handle with an empty type or a nil handler")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.handlers[typ]; ok && !r.builtin[typ] {
		panic(fmt.Sprintf("agent: a handler for %q is already registered", typ))
	}
	r.handlers[typ] = h
	delete(r.builtin, typ)
}

// renderable reports why a request could not render m, as far as it
// can be told from m alone: no handler for its type, or, for the
// built-in handlers, a tool or an advisor it names that r lacks.
func (r *Registry) renderable(m *message.Message) error {
	if _, err := r.handler(m.Type); err != nil {
		return err
	}
	switch {
	case m.Type == message.TypeTool && r.builtinType(m.Type):
		tools, err := m.OfferedTools()
		if err != nil {
			return err
		}
		for _, t := range tools {
			if t.Def == nil {
				if _, err := r.LookupTool(t.Name); err != nil {
					return err
				}
			} else if _, err := r.Schemas().Compile(t.Def); err != nil {
				return fmt.Errorf("tool %q: %w", t.Name, err)
			}
		}
	case m.Type == message.TypeAdvisor && r.builtinType(m.Type) && m.Advisor != nil && m.Advisor.Name != "":
		if _, _, err := r.lookupAdvisor(m.Advisor); err != nil {
			return err
		}
	}
	return nil
}

// builtinType reports whether messages of typ go to the built-in handler.
func (r *Registry) builtinType(typ message.Type) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.builtin[typ]
}

// HandleFunc registers f for messages of type typ.
func (r *Registry) HandleFunc(typ message.Type, f HandlerFunc) { r.Handle(typ, f) }

// Handle registers h in [DefaultRegistry].
func Handle(typ message.Type, h Handler) { DefaultRegistry.Handle(typ, h) }

func (r *Registry) handler(typ message.Type) (Handler, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	h, ok := r.handlers[typ]
	if !ok {
		// The types there are, so that a typo ("txt") shows.
		types := make([]string, 0, len(r.handlers))
		for t := range r.handlers {
			types = append(types, string(t))
		}
		slices.Sort(types)
		return nil, fmt.Errorf("%w %q (types: %s; register one with Registry.Handle)", ErrUnknownType, typ, strings.Join(types, ", "))
	}
	return h, nil
}

// Tool registers a tool definition under name: a JSON Schema object whose
// non-underscored properties are the tool's parameters and whose
// meta-properties (_output, _outputPath, _activity, ...) say how it runs. A
// tool message can then name it ({"type":"tool","tool":"name"}, see
// [message.Tool] and [Registry.Offer]); the model is offered only the tools
// the context's tool messages name. [Func] registers a tool and its
// activity from a Go function.
func (r *Registry) Tool(name string, s json.RawMessage) {
	if why := badToolName(name); why != "" {
		panic(fmt.Sprintf("agent: invalid tool name %q: %s", name, why))
	}
	// A compact copy: the caller may reuse s.
	var c bytes.Buffer
	if json.Compact(&c, s) != nil || !bytes.HasPrefix(c.Bytes(), []byte("{")) {
		panic(fmt.Sprintf("agent: tool %q: schema is not a JSON object", name))
	}
	s = c.Bytes()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[name]; ok {
		panic(fmt.Sprintf("agent: tool %q is already registered", name))
	}
	r.tools[name] = s
}

// badToolName says why name cannot name a tool, or "" when it can.
func badToolName(name string) string {
	switch {
	case name == "":
		return "empty"
	case strings.HasPrefix(name, "_"):
		return "a leading _ marks a meta-property"
	case strings.HasPrefix(name, "Tool."):
		return `"Tool.x" is another name for the tool x`
	}
	return ""
}

// LookupTool returns the registered definition of a tool, compact, as a
// copy the caller owns.
func (r *Registry) LookupTool(name string) (json.RawMessage, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.tools[strings.TrimPrefix(name, "Tool.")]
	if !ok {
		return nil, fmt.Errorf("%w %q (%s)", ErrUnknownTool, name, r.registeredTools())
	}
	return bytes.Clone(s), nil
}

// registeredTools lists the registered tools for an error, or says there
// are none, so that an empty list does not read as a cut-off message. The
// caller holds r.mu.
func (r *Registry) registeredTools() string {
	if len(r.tools) == 0 {
		return "no tool is registered"
	}
	return "registered: " + strings.Join(slices.Sorted(maps.Keys(r.tools)), ", ")
}

// ToolNames returns the names of the registered tools, sorted.
func (r *Registry) ToolNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.tools))
}

// Schemas returns the named schemas that composed schemas may $ref.
func (r *Registry) Schemas() *schema.Registry { return r.schemas }

// compile compiles a composed schema; the schema registry caches it by
// content, so a loop that asks with the same tools compiles once. An
// optional property may be null, which means absent: strict structured
// output modes (OpenAI's) make every property required and have the model
// write null for the ones it leaves out.
func (r *Registry) compile(s json.RawMessage) (*schema.Schema, error) {
	return r.schemas.CompileFor(s, schema.OpenAI)
}
