package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/schema"
)

// defineTools reads a tool message (002): a map of tool names to schemas,
// one schema with a _tool const, or the name of a registered tool. Later
// definitions of a name replace earlier ones.
func defineTools(_ context.Context, b *Build, m *message.Message) error {
	tools, err := m.OfferedTools()
	if err != nil {
		return err
	}
	for _, t := range tools {
		def := t.Def
		if def == nil {
			if def, err = b.Registry.LookupTool(t.Name); err != nil {
				return err
			}
		}
		if err := defineTool(b, t.Name, def); err != nil {
			return err
		}
	}
	return nil
}

func defineTool(b *Build, name string, def json.RawMessage) error {
	// A tool that names an activity is explicit even where that activity
	// is not registered: a plain Request does not run calls.
	a, _, aerr := b.Registry.resolveActivity(name, def)
	explicit := a != nil || aerr != nil || bytes.Contains(def, []byte(`"_delegate"`)) // a delegate makes its own output
	// In lazy mode nothing runs: a latent tool is shaped as an explicit
	// one, without the _output the model would otherwise write.
	explicit = explicit || b.lazy
	sh, err := shape(name, def, explicit, b.defNames(name))
	if err != nil {
		return fmt.Errorf("tool %q: %w", name, err)
	}
	b.DefineTool(name, sh.llm)
	b.setShape(name, sh)
	return nil
}

// shaped is a tool definition prepared for requests: what the model sees,
// what a call must meet, and how the tool runs.
type shaped struct {
	llm    json.RawMessage // what the model sees: parameters may be references
	check  json.RawMessage // what a call must meet once its references are resolved
	def    json.RawMessage // the definition they were made from
	result json.RawMessage // an explicit tool's _output: what its activity must return; nil when none
	// output is the tool's _output on its own, definitions included: what
	// a latent call or an anonymous delegate is asked to produce.
	output json.RawMessage
	// defs are the definitions llm refers to, which the composed schema
	// holds at its root (check and result hold them too).
	defs []schema.Def

	activity string   // its _activity, if any
	delegate string   // its _delegate, if any
	scopes   []string // its provisioned _scopes const, if scoped
	scoped   bool
	// ownInstance: the tool declares its own _instance, which the model
	// fills as the tool says (it may name a new instance).
	ownInstance bool
}

// compiledCheck returns the compiled check schema; the registry's schemas
// are compiled once per content.
func (s *shaped) compiledCheck(r *Registry) (*schema.Schema, error) { return r.compile(s.check) }

// compiledResult returns the compiled result schema, or nil when the tool
// declares none. It is the schema as written: a null in what code returns
// is a value, not a property a strict model left out.
func (s *shaped) compiledResult(r *Registry) (*schema.Schema, error) {
	if s.result == nil {
		return nil, nil
	}
	return r.schemas.Compile(s.result)
}

// setShape records the shaped definition of a tool; the latest wins.
func (b *Build) setShape(name string, sh *shaped) {
	if i := slices.Index(b.shapeNames, name); i >= 0 {
		b.shapes[i] = sh
		return
	}
	b.shapeNames = append(b.shapeNames, name)
	b.shapes = append(b.shapes, sh)
}

// shape returns the shaped definition of a tool, or nil.
func (b *Build) shape(name string) *shaped {
	if i := slices.Index(b.shapeNames, name); i >= 0 {
		return b.shapes[i]
	}
	return nil
}

// defNames returns the names a tool's definitions may not take in the
// composed schema: the shared ones, and those of the other tools.
// Definitions are named after their tool ("lookup.Node"), so these only
// clash where tool names have dots.
func (b *Build) defNames(tool string) []string {
	names := metaNames[:len(metaNames):len(metaNames)] // appending copies
	for i, sh := range b.shapes {
		if b.shapeNames[i] != tool {
			for _, d := range sh.defs {
				names = append(names, d.Name)
			}
		}
	}
	return names
}

// shape prepares a tool definition for requests, once per run that
// offers the tool, as a loop handles its messages once. The definition
// goes inside the composed schema, where "#" is no longer its root: its
// local refs come to point to definitions at the composed schema's root,
// named after the tool, which keeps recursion (a tree of Go structs) and
// says each definition once. taken are the names in use there.
func shape(name string, def json.RawMessage, explicit bool, taken []string) (*shaped, error) {
	body, defs, err := schema.Embed(def, name, taken)
	if err != nil {
		return nil, err // the caller names the tool
	}
	body = schema.Deref(body, defs) // the tool refers to itself
	check, llm, result, output, err := llmTool(name, body, explicit)
	if err != nil {
		return nil, err
	}
	sh := &shaped{llm: llm, check: withDefs(check, defs), def: def, output: withDefs(output, defs), defs: defs,
		activity: activityOf(def), delegate: delegateOf(def)}
	if result != nil {
		sh.result = sh.output
	}
	if err := checkMetaProperties(def, sh.delegate); err != nil {
		return nil, err
	}
	sh.scopes, sh.scoped, _ = callScopes(def, nil)
	sh.ownInstance = declares(def, "_instance")
	return sh, nil
}

// checkMetaProperties checks what a tool's definition fixes (a const)
// or offers (an enum) of the meta-properties calls take, and its
// _delegate (delegate is the one shape read from it): each that does not
// parse would fail every call, or, read as nothing, change what the tool
// is. A _scopes const that is no list would be read as no scopes at all;
// a _delegate that is no name, as a tool that neither runs an Idea nor
// is latent.
func checkMetaProperties(def json.RawMessage, delegate string) error {
	if !bytes.Contains(def, []byte(`"_`)) {
		return nil
	}
	type values struct {
		Const json.RawMessage   `json:"const"`
		Enum  []json.RawMessage `json:"enum"`
		Items struct {
			Enum []json.RawMessage `json:"enum"`
		} `json:"items"`
	}
	var d struct {
		Delegate   json.RawMessage `json:"_delegate"`
		Properties struct {
			Scopes values `json:"_scopes"`
			Path   values `json:"_outputPath"`
			Method values `json:"_outputMethod"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(def, &d)
	var scopes []string
	if c := d.Properties.Scopes.Const; c != nil && json.Unmarshal(c, &scopes) != nil {
		return fmt.Errorf("_scopes: the const of a tool's _scopes is an array of kinds and references, got %s", compact(c))
	}
	for _, e := range d.Properties.Scopes.Items.Enum {
		var s string
		if json.Unmarshal(e, &s) == nil { // the schema refuses others
			scopes = append(scopes, s)
		}
	}
	if _, err := parseScopes(scopes); err != nil {
		return errorf("_scopes: %w", err)
	}
	for _, p := range []struct {
		name  string
		v     values
		check func(string) error
	}{
		{"_outputPath", d.Properties.Path, func(s string) error { _, err := ref.Parse(s); return err }},
		{"_outputMethod", d.Properties.Method, func(s string) error { _, err := ref.ParseMethod(s); return err }},
	} {
		for _, raw := range append([]json.RawMessage{p.v.Const}, p.v.Enum...) {
			var s string
			if raw == nil || json.Unmarshal(raw, &s) != nil || s == "" {
				continue // no value, or one the schema refuses in a call
			}
			if err := p.check(s); err != nil {
				return fmt.Errorf("%s %q: %w", p.name, s, err)
			}
		}
	}
	if d.Delegate != nil && string(d.Delegate) != "null" && delegate == "" {
		return fmt.Errorf("_delegate names an Idea or is %q, got %s", Anonymous, compact(d.Delegate))
	}
	return nil
}

// declares reports whether a tool's schema has the property name.
func declares(def json.RawMessage, name string) bool {
	if !bytes.Contains(def, []byte(`"`+name+`"`)) {
		return false
	}
	o, err := ojson.Parse(def)
	if err != nil {
		return false
	}
	props, err := ojson.Parse(o.Get("properties"))
	return err == nil && props.Has(name)
}

// refSchema is what a parameter may hold instead of its value: a
// reference to a value in the context (007). Its pattern, like
// outputPathSchema's, is anchored at both ends: llama.cpp's grammar
// converter (llama-server, Ollama, LM Studio) refuses any other, and
// the whole request with it.
var refSchema = json.RawMessage(`{"type":"string","pattern":"^†[A-Za-z0-9_-]+.*$","description":"A reference †kind.path to a value in the context, resolved before the call runs."}`)

// referable lets each parameter of the tool o be a reference, so the
// model can wire values instead of copying them: o with props so changed.
// Calls are checked against the plain schema once their references are
// resolved. The model is offered the instances of its context, when it
// has any (withInstances), rather than any string as _instance.
func referable(o, props *ojson.Object) json.RawMessage {
	p := &ojson.Object{}
	for i, k := range props.Keys {
		v := props.Values[i]
		switch {
		case k == "_instance" && string(v) == instanceAny:
			continue
		case !strings.HasPrefix(k, "_"):
			v = json.RawMessage(`{"anyOf":[` + string(v) + `,` + metaRef("_reference") + `]}`)
		default:
			if d := metaDef(k); d != nil && bytes.Equal(v, d) {
				v = json.RawMessage(metaRef(k))
			}
		}
		p.Set(k, v)
	}
	r := &ojson.Object{Keys: slices.Clone(o.Keys), Values: slices.Clone(o.Values)}
	r.Set("properties", p.Bytes())
	return r.Bytes()
}

// outputMethodSchema is how a result combines with what is at the output
// path (008), offered to every tool that does not declare its own.
var outputMethodSchema = json.RawMessage(`{"enum":["set","merge","assign","push","concat"],"description":"How the result combines with what is at _outputPath: set replaces it (the default), merge deep-merges objects, assign merges their top level, push appends it to an array, concat appends its elements."}`)

// reasoningSchema is _reasoningForCall (002): why the model makes the call.
var reasoningSchema = json.RawMessage(`{"type":"string","description":"Why this call, in a sentence or two, before deciding its tool and parameters."}`)

// outputPathSchema is offered to the model for tools that do not declare
// their own _outputPath: any reference, chosen by the model (008).
var outputPathSchema = json.RawMessage(`{"type":"string","pattern":"^†.*$","description":"Where to write the result, e.g. †state.summary; || branches on failure, && fans out. Omit to not keep the result."}`)

// llmTool turns a tool definition into what a call must meet (check)
// and what the model sees inside calls (llm, see referable):
// _reasoningForCall and _tool first, the parameters, then the
// meta-properties the tool allows. Execution details (_activity, _delegate) are the runtime's
// business and are removed; so is _output for explicit tools, whose result
// comes from code, not from the model (002); it is returned as result,
// which that code's results must meet. output is _output either way.
func llmTool(name string, def json.RawMessage, explicit bool) (check, llm, result, output json.RawMessage, _ error) {
	o, err := ojson.Parse(def)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("schema: %w", err)
	}
	props := &ojson.Object{}
	if p := o.Get("properties"); p != nil {
		if props, err = ojson.Parse(p); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("properties: %w", err)
		}
	}
	if o.Has("_output") {
		// A validator ignores an unknown keyword: the tool would have no
		// result to check, and a latent call nothing to produce.
		return nil, nil, nil, nil, errors.New("_output stands beside properties; it is a property, declare it in properties (002)")
	}
	explicit = explicit || o.Has("_activity") || props.Has("_activity")
	for _, k := range []string{"_activity", "_delegate", "_tool"} {
		o.Delete(k)
		props.Delete(k)
	}
	output = props.Get("_output")
	if explicit {
		result = output
		props.Delete("_output")
	}
	if !props.Has("_outputPath") {
		props.Set("_outputPath", outputPathSchema)
	}
	if !props.Has("_outputMethod") {
		props.Set("_outputMethod", outputMethodSchema)
	}
	// _instance is checked as any string: a request offers the instances
	// of its context (Build.compose), and a plan's calls name their own.
	if !props.Has("_instance") {
		props.Set("_instance", json.RawMessage(instanceAny))
	}
	props.SetFirst("_tool", json.RawMessage(`{"const":`+string(ojson.Quote(name))+`}`))
	if !props.Has("_reasoningForCall") {
		props.SetFirst("_reasoningForCall", reasoningSchema) // first: the model reasons before it commits
	}
	var required []string
	if r := o.Get("required"); r != nil {
		if err := json.Unmarshal(r, &required); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("required: %w", err)
		}
	}
	req := []string{"_tool"}
	for _, r := range required {
		if r != "_tool" && props.Has(r) {
			req = append(req, r)
		}
	}
	rb, _ := json.Marshal(req)
	if !o.Has("type") {
		o.SetFirst("type", json.RawMessage(`"object"`))
	}
	o.Set("required", rb)
	llm = referable(o, props)
	o.Set("properties", props.Bytes())
	return o.Bytes(), llm, result, output, nil
}

// toolResult returns what a latent call or an anonymous delegate is asked
// to produce: its tool's description and _output, with the definitions
// that _output refers to.
func (c *Call) toolResult() (description string, output json.RawMessage) {
	var d struct {
		Description string `json:"description"`
		Properties  struct {
			Output json.RawMessage `json:"_output"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(c.Schema, &d)
	if c.shape != nil {
		return d.Description, c.shape.output
	}
	return d.Description, d.Properties.Output
}
