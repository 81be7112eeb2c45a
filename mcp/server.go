package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/schema"
)

// resultPath is where a served tool's call writes its result when the
// tool does not provision its own _outputPath; the server reads it there.
const resultPath = "†state.result"

// ServerConfig configures [NewServer]. Its zero value serves no tools.
type ServerConfig struct {
	// Name and Version identify the server in the MCP handshake; empty
	// means "acts" and this module's version.
	Name    string
	Version string
	// Agent configures the runs behind the tools. Its Registry holds the
	// tools (nil means agent.DefaultRegistry); its Provider and Model run
	// the Ideas, and the calls of tools that need a model (a delegate, or
	// a latent tool); its limits, Confirm hook, Store and the rest apply
	// to every call. Each call is a run of its own: RunID is ignored.
	Agent agent.Config
	// Tools names the registered tools to serve, each under its own name:
	// its parameters (meta-properties left out) are the input schema, its
	// _output the output schema, named schemas and the tool's definitions
	// they refer to bundled into $defs. A call
	// runs as a plan of that one call ([agent.ExecutePlan]): parameters
	// checked against the tool's schema (a string argument is a literal,
	// never a reference), its activity run, its result checked against
	// _output. The result is what the call wrote to its output path:
	// the tool's provisioned _outputPath, else †state.result; a result
	// sent down the failure branch of a branching path is an error.
	Tools []string
	// Ideas are served as tools named by their keys (Ideators, 103). A
	// tool's input schema is the Idea's input declaration (an input
	// message with a schema and no data), or any object when it declares
	// none; its output schema is the Idea's schema; its description the
	// Idea's first system message. A call runs the Idea with [agent.Run]:
	// its context, the declaration taken out, then the arguments as an
	// input message. The Ideas' own MCP servers are not connected here;
	// acts mcp serve connects them.
	Ideas map[string]*agent.Idea
}

// NewServer returns an MCP server that serves cfg's tools and Ideas.
// Run it on any SDK transport; `acts mcp serve` runs it over stdio:
//
//	err := srv.Run(ctx, &sdk.StdioTransport{})
//
// and sdk.NewStreamableHTTPHandler serves it over HTTP. A tool whose
// call fails (parameters that do not fit, an activity's error, a run
// that ends in an error) answers with a result whose isError is set and
// whose text says why, not with a protocol error.
//
// NewServer reads the tools and Ideas now; changing them later does not
// change the server. It fails on a tool that is not registered, two
// tools of one name, a name MCP does not allow (letters, digits, "_",
// "-" and ".", up to 128), a schema it cannot serve, and Ideas without
// cfg.Agent.Provider.
func NewServer(cfg ServerConfig) (*sdk.Server, error) {
	run := cfg.Agent
	if run.Registry == nil {
		run.Registry = agent.DefaultRegistry
	}
	run.RunID = ""
	if len(cfg.Ideas) > 0 && run.Provider == nil {
		return nil, fmt.Errorf("mcp: serve ideas: %w (set ServerConfig.Agent.Provider)", agent.ErrNoProvider)
	}
	impl := &sdk.Implementation{Name: cfg.Name, Version: cfg.Version}
	if impl.Name == "" {
		impl.Name = "acts"
	}
	if impl.Version == "" {
		impl.Version = version()
	}
	srv := sdk.NewServer(impl, &sdk.ServerOptions{Logger: cfg.Agent.Logger})
	seen := map[string]bool{}
	claim := func(name string) error {
		if err := validToolName(name); err != nil {
			return fmt.Errorf("mcp: serve %q: %w", name, err)
		}
		if seen[name] {
			return fmt.Errorf("mcp: serve %q: %w: two tools of that name", name, ErrClash)
		}
		seen[name] = true
		return nil
	}
	for _, name := range cfg.Tools {
		if err := claim(name); err != nil {
			return nil, err
		}
		def, err := run.Registry.LookupTool(name)
		if err != nil {
			return nil, fmt.Errorf("mcp: serve %q: %w", name, err)
		}
		t, st, err := newServedTool(run, name, def)
		if err != nil {
			return nil, fmt.Errorf("mcp: serve %q: %w", name, err)
		}
		srv.AddTool(t, st.call)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Ideas)) {
		if err := claim(name); err != nil {
			return nil, err
		}
		t, it, err := newServedIdea(run, name, cfg.Ideas[name])
		if err != nil {
			return nil, fmt.Errorf("mcp: serve idea %q: %w", name, err)
		}
		srv.AddTool(t, it.call)
	}
	return srv, nil
}

// validToolName checks a name against what MCP allows.
func validToolName(name string) error {
	if name == "" || len(name) > 128 {
		return errors.New("a tool name has 1 to 128 characters")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("a tool name has letters, digits, \"_\", \"-\" and \".\", not %q", r)
		}
	}
	return nil
}

// servedTool is a registered tool served over MCP.
type servedTool struct {
	cfg  agent.Config
	name string
	path string   // the calls' _outputPath
	out  ref.Expr // path, parsed
}

// newServedTool returns the MCP tool of a registered tool's definition: its
// parameters (meta-properties left out) as the input schema, its _output
// as the output schema, named schemas bundled in.
func newServedTool(cfg agent.Config, name string, def json.RawMessage) (*sdk.Tool, *servedTool, error) {
	o, err := ojson.Parse(def)
	if err != nil {
		return nil, nil, fmt.Errorf("definition: %w", err)
	}
	props := &ojson.Object{}
	if p := o.Get("properties"); p != nil {
		if props, err = ojson.Parse(p); err != nil {
			return nil, nil, fmt.Errorf("definition: properties: %w", err)
		}
	}
	var description string
	if d := o.Get("description"); d != nil {
		_ = json.Unmarshal(d, &description)
	}
	in := &ojson.Object{}
	in.Set("type", json.RawMessage(`"object"`))
	params := &ojson.Object{}
	for i, k := range props.Keys {
		if !strings.HasPrefix(k, "_") {
			params.Set(k, props.Values[i])
		}
	}
	for i, k := range o.Keys {
		switch {
		case k == "type" || k == "description" || strings.HasPrefix(k, "_"):
		case k == "properties":
			in.Set(k, params.Bytes())
		case k == "required":
			var req []string
			if err := json.Unmarshal(o.Values[i], &req); err != nil {
				return nil, nil, fmt.Errorf("definition: required: %w", err)
			}
			req = slices.DeleteFunc(req, func(r string) bool { return strings.HasPrefix(r, "_") })
			if len(req) > 0 {
				b, _ := json.Marshal(req)
				in.Set(k, b)
			}
		default:
			in.Set(k, o.Values[i])
		}
	}
	t := &sdk.Tool{Name: name, Description: description}
	if t.InputSchema, err = selfContained(cfg.Registry, in.Bytes()); err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	if out := props.Get("_output"); out != nil {
		if out, err = withDefs(out, o.Get("$defs")); err != nil {
			return nil, nil, fmt.Errorf("output schema: %w", err)
		}
		if t.OutputSchema, err = outputSchema(cfg.Registry, out); err != nil {
			return nil, nil, fmt.Errorf("output schema: %w", err)
		}
	}
	st := &servedTool{cfg: cfg, name: name, path: resultPath}
	var provisioned struct {
		Const *string `json:"const"`
	}
	if p := props.Get("_outputPath"); p != nil && json.Unmarshal(p, &provisioned) == nil && provisioned.Const != nil {
		st.path = *provisioned.Const
	}
	if st.out, err = ref.Parse(st.path); err != nil {
		return nil, nil, fmt.Errorf("_outputPath: %w", err)
	}
	return t, st, nil
}

// withDefs returns a tool's _output schema out standing alone: inside
// the tool, its local refs point to the tool's definitions (defs, the
// value of its "$defs"), which go along with it.
func withDefs(out, defs json.RawMessage) (json.RawMessage, error) {
	if defs == nil || !bytes.Contains(out, []byte(`"#/$defs/`)) {
		return out, nil
	}
	o, err := ojson.Parse(out)
	if err != nil || o.Get("$defs") != nil { // not an object, or definitions of its own
		return out, nil
	}
	o.Set("$defs", defs)
	return o.Bytes(), nil
}

// selfContained returns a schema with the named schemas it refers to
// bundled into its $defs: an MCP client knows no registry.
func selfContained(reg *agent.Registry, s json.RawMessage) (json.RawMessage, error) {
	return reg.Schemas().Adapt(s, schema.Full)
}

// outputSchema is a tool's outputSchema: s self-contained when it is an
// object's schema, else none. Before the 2026-07-28 revision, MCP takes
// only an object there (and as structuredContent), and a client of an
// earlier one may refuse the whole tools/list for one that is not; the
// result's text carries the value either way.
func outputSchema(reg *agent.Registry, s json.RawMessage) (json.RawMessage, error) {
	out, err := selfContained(reg, s)
	if err != nil {
		return nil, err
	}
	out = rootDef(out)
	var root struct {
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(out, &root) != nil || string(root.Type) != `"object"` {
		return nil, nil
	}
	return out, nil
}

// rootDef returns s as the definition its root refers to, when s is a
// ref to one of its own definitions (a registered schema, a recursive
// type), so that an object's schema reads as one; else s.
func rootDef(s json.RawMessage) json.RawMessage {
	o, err := ojson.Parse(s)
	if err != nil || o.Get("$ref") == nil || o.Get("$defs") == nil {
		return s
	}
	d, err := ojson.Parse(o.Get("$defs"))
	if err != nil {
		return s
	}
	defs := make([]schema.Def, len(d.Keys))
	for i, k := range d.Keys {
		defs[i] = schema.Def{Name: k, Schema: d.Values[i]}
	}
	return schema.Deref(s, defs)
}

// call runs a call of the tool as a plan of one call, and reads its
// result where the call wrote it.
func (st *servedTool) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	call, err := planCall(st.name, st.path, req.Params.Arguments)
	if err != nil {
		return failed(fmt.Errorf("tool %q: %w", st.name, err)), nil
	}
	res, err := agent.ExecutePlan(ctx, st.cfg, []json.RawMessage{call}, nil)
	if err != nil {
		return failed(fmt.Errorf("tool %q: %w", st.name, err)), nil
	}
	var errs []string
	for _, m := range res.Log.All() {
		if m.Type == message.TypeError {
			errs = append(errs, m.Error)
		}
	}
	if len(errs) > 0 {
		return failed(errors.New(strings.Join(errs, "\n"))), nil
	}
	lookup := func(g ref.Group) (json.RawMessage, bool) {
		for _, r := range g {
			if v, err := res.Log.Lookup(r.Kind, r.Path); err == nil {
				return v, true
			}
		}
		return nil, false
	}
	alts := st.out.Alts
	if v, ok := lookup(alts[0]); ok {
		return succeeded(v), nil
	}
	if v, ok := lookup(alts[len(alts)-1]); ok && len(alts) > 1 {
		// The activity sent its result down the failure branch.
		return failed(fmt.Errorf("tool %q failed: %s", st.name, v)), nil
	}
	return succeeded(json.RawMessage(`null`)), nil
}

// planCall returns the call of tool with args as its parameters, writing
// to path. A string argument is a literal, never a reference: one that
// starts with a dagger is escaped.
func planCall(tool, path string, args json.RawMessage) (json.RawMessage, error) {
	if args = bytes.TrimSpace(args); len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	o, err := ojson.Parse(args)
	if err != nil {
		return nil, errors.New("the arguments are not a JSON object")
	}
	call := &ojson.Object{}
	call.Set("_tool", ojson.Quote(tool))
	for i, k := range o.Keys {
		if strings.HasPrefix(k, "_") {
			return nil, fmt.Errorf("argument %q: a name starting with \"_\" is a meta-property, not a parameter", k)
		}
		v, err := literal(o.Values[i])
		if err != nil {
			return nil, fmt.Errorf("argument %q: %w", k, err)
		}
		call.Set(k, v)
	}
	call.Set("_outputPath", ojson.Quote(path))
	return call.Bytes(), nil
}

// literal returns v with every string that starts with a dagger escaped
// (ref.Escape), at any depth, so that no string reads as a reference.
func literal(v json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(v, []byte(ref.Dagger)) && !bytes.Contains(bytes.ToLower(v), []byte(`\u2020`)) {
		return v, nil
	}
	v = bytes.TrimSpace(v)
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, err
		}
		return ojson.Quote(ref.Escape(s)), nil
	case '{':
		o, err := ojson.Parse(v)
		if err != nil {
			return nil, err
		}
		for i := range o.Values {
			if o.Values[i], err = literal(o.Values[i]); err != nil {
				return nil, err
			}
		}
		return o.Bytes(), nil
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, err
		}
		b := []byte{'['}
		for i, it := range items {
			x, err := literal(it)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, x...)
		}
		return append(b, ']'), nil
	}
	return v, nil
}

// servedIdea is an Idea served over MCP.
type servedIdea struct {
	cfg       agent.Config
	name      string
	schema    json.RawMessage
	context   *message.Log    // the Idea's context without its input declaration; read as copies
	input     json.RawMessage // the input declaration's schema, or nil
	check     *schema.Schema  // input, compiled
	presets   map[string]agent.Preset
	rendering agent.Rendering
}

// newServedIdea returns the MCP tool of an Idea, and what runs its calls.
// It copies what it keeps of the Idea.
func newServedIdea(cfg agent.Config, name string, idea *agent.Idea) (*sdk.Tool, *servedIdea, error) {
	if idea == nil {
		return nil, nil, errors.New("nil idea")
	}
	idea = idea.Clone() // the caller's to change after
	si := &servedIdea{cfg: cfg, name: name, schema: idea.Schema, presets: idea.Presets, rendering: idea.Rendering}
	if si.schema == nil {
		si.schema = json.RawMessage(`{}`)
	}
	t := &sdk.Tool{Name: name}
	var msgs []message.Message
	for _, m := range idea.Context {
		if m.Type == message.TypeData && m.Kind == message.KindInput && m.Data == nil && m.Schema != nil {
			si.input = m.Schema // the input declaration (103); the last one wins, as for delegates
			continue
		}
		if m.Type == message.TypeText && m.Role == message.RoleSystem && t.Description == "" {
			t.Description = m.Text
		}
		msgs = append(msgs, m)
	}
	var err error
	if si.context, err = message.NewLog(msgs...); err != nil { // copies them
		return nil, nil, fmt.Errorf("context: %w", err)
	}
	in := json.RawMessage(`{"type":"object"}`)
	if si.input != nil {
		if si.check, err = cfg.Registry.Schemas().Compile(si.input); err != nil {
			return nil, nil, fmt.Errorf("input schema: %w", err)
		}
		o, err := ojson.Parse(si.input)
		if err != nil {
			return nil, nil, fmt.Errorf("input schema: %w", err)
		}
		var typ string
		switch v := o.Get("type"); {
		case v == nil:
			o.SetFirst("type", json.RawMessage(`"object"`))
		case json.Unmarshal(v, &typ) != nil || typ != "object":
			return nil, nil, fmt.Errorf("input schema has type %s; MCP takes an object", v)
		}
		in = o.Bytes()
	}
	if t.InputSchema, err = selfContained(cfg.Registry, in); err != nil {
		return nil, nil, fmt.Errorf("input schema: %w", err)
	}
	if idea.Schema != nil {
		if t.OutputSchema, err = outputSchema(cfg.Registry, idea.Schema); err != nil {
			return nil, nil, fmt.Errorf("schema: %w", err)
		}
	}
	return t, si, nil
}

// call runs the Idea with the arguments as its input, and returns the
// run's output.
func (si *servedIdea) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	args := bytes.TrimSpace(req.Params.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if si.check != nil {
		if err := si.check.Validate(args); err != nil {
			return failed(fmt.Errorf("idea %q: input: %w", si.name, err)), nil
		}
	}
	msgs := si.context.Messages()
	if si.input != nil || string(args) != "{}" {
		msgs = append(msgs, message.Message{Type: message.TypeData, Kind: message.KindInput, Data: bytes.Clone(args), Schema: si.input})
	}
	msgs, err := agent.ExpandPresets(si.cfg.Registry, si.presets, msgs)
	if err != nil {
		return failed(fmt.Errorf("idea %q: %w", si.name, err)), nil
	}
	cfg := si.cfg
	if cfg.Rendering == "" {
		cfg.Rendering = si.rendering
	}
	res, err := agent.Run(ctx, cfg, si.schema, msgs)
	if err != nil {
		return failed(fmt.Errorf("idea %q: %w", si.name, err)), nil
	}
	return succeeded(res.Solution.Output), nil
}

// succeeded is the result of a call that produced v: v as structured
// content when it is an object (see outputSchema), and as text for
// clients that read only text.
func succeeded(v json.RawMessage) *sdk.CallToolResult {
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(v)}}}
	if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '{' {
		res.StructuredContent = v
	}
	return res
}

// failed is the result of a call that failed with err: isError, err's
// text as the content.
func failed(err error) *sdk.CallToolResult {
	res := &sdk.CallToolResult{}
	res.SetError(err)
	return res
}
