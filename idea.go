package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
)

// Idea is a saved, reproducible Request (101): the output schema, the
// context, and the solution once there is one.
type Idea struct {
	Schema   json.RawMessage   `json:"schema"`
	Context  []message.Message `json:"context"`
	Solution json.RawMessage   `json:"solution,omitempty"`
	// Rendering is how its runs show data to the model (Config.Rendering),
	// a delegate's sub-run included; empty means the default, RenderCached
	// (for a delegate, its parent run's rendering).
	Rendering Rendering `json:"rendering,omitempty"`
	// Presets are the Idea's own presets (801), found before a registry's
	// when its context names one (see ExpandPresets).
	Presets map[string]Preset `json:"presets,omitempty"`
	// MCP lists the MCP servers whose tools its runs may call; the mcp
	// package connects them (mcp.ConnectIdea).
	MCP []MCPServer `json:"mcp,omitempty"`
}

// Clone returns a deep copy of idea, which shares no memory with it: what
// keeps an Idea (a registry, an MCP server) keeps its own, and the caller
// may change idea after.
func (idea *Idea) Clone() *Idea {
	c := *idea
	c.Schema, c.Solution = bytes.Clone(idea.Schema), bytes.Clone(idea.Solution)
	c.Context = slices.Clone(idea.Context)
	for i := range c.Context {
		c.Context[i] = c.Context[i].Clone()
	}
	if idea.Presets != nil {
		c.Presets = make(map[string]Preset, len(idea.Presets))
		for name, p := range idea.Presets {
			c.Presets[name] = p.clone()
		}
	}
	c.MCP = slices.Clone(idea.MCP)
	for i := range c.MCP {
		c.MCP[i].Command, c.MCP[i].Env = slices.Clone(c.MCP[i].Command), slices.Clone(c.MCP[i].Env)
	}
	return &c
}

// MCPServer says how to reach an MCP server: a program to start, which
// speaks MCP on its standard input and output, or the URL of a streamable
// HTTP endpoint. It is plain data, as an Idea file holds it; package mcp
// connects to it.
type MCPServer struct {
	// Name names the server in errors; empty means its command or URL.
	Name string `json:"name,omitempty"`
	// Command is the program and its arguments.
	Command []string `json:"command,omitempty"`
	// Env holds KEY=VALUE entries added to the program's environment.
	Env []string `json:"env,omitempty"`
	// URL is the streamable HTTP endpoint.
	URL string `json:"url,omitempty"`
	// Prefix is put before the name of each of the server's tools, as it
	// is, to keep them apart from other tools: "fs_" makes "read_file"
	// "fs_read_file".
	Prefix string `json:"prefix,omitempty"`
}

// Check reports a server description that names both a command and a
// URL, or neither, that has a malformed Env entry, or Env for a URL, or
// a Prefix that no tool name may start with ("_", "Tool.").
func (s MCPServer) Check() error {
	switch {
	case len(s.Command) > 0 && s.URL != "":
		return errors.New("both command and url are set; give one")
	case len(s.Command) == 0 && s.URL == "":
		return errors.New("give a command or a url")
	case len(s.Command) > 0 && s.Command[0] == "":
		return errors.New("the command's program is empty")
	case s.URL != "" && len(s.Env) > 0:
		// It would be dropped: env goes to a program the run starts.
		return errors.New("env is set for a url server; it is for a command")
	case strings.HasPrefix(s.Prefix, "_"):
		return fmt.Errorf(`prefix %q starts with "_", which marks a meta-property: no tool could take its name`, s.Prefix)
	case strings.HasPrefix(s.Prefix, "Tool."):
		return fmt.Errorf(`prefix %q starts with "Tool.", which names the tool after it: no tool could take its name`, s.Prefix)
	}
	for _, e := range s.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("env entry %q is not KEY=VALUE", e)
		}
	}
	return nil
}

// ParseIdea reads an Idea file's JSON. Errors name the field and, for the
// context, the message. A field that an Idea, or a preset or MCP server
// of it, does not have is an error: a misspelt one would be dropped. A
// key that starts with "$" ("$schema", which editors read to check the
// file, "$comment") is an annotation, and is ignored.
func ParseIdea(data []byte) (*Idea, error) {
	var raw struct {
		Schema    json.RawMessage   `json:"schema"`
		Context   json.RawMessage   `json:"context"`
		Solution  json.RawMessage   `json:"solution"`
		Rendering Rendering         `json:"rendering"`
		Presets   map[string]Preset `json:"presets"`
		MCP       []MCPServer       `json:"mcp"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, errorf("agent: idea: field %q: unexpected JSON %s", te.Field, te.Value)
		}
		if errors.As(err, &te) {
			return nil, errorf("agent: idea must be a JSON object with schema and context, got %s", te.Value)
		}
		// An Idea is written by hand: a syntax error says where it is.
		return nil, errorf("agent: idea: %w", jsonfast.WithPosition(data, err))
	}
	// A misspelt field would otherwise be dropped in silence: a
	// "contxt" runs the Idea with no context at all.
	if err := unknownFields(data, "", ideaFields); err != nil {
		return nil, err
	}
	if raw.Schema == nil {
		return nil, errorf("agent: idea: field \"schema\" is missing")
	}
	if err := raw.Rendering.Check(); err != nil {
		return nil, errorf("agent: idea: %w", err)
	}
	for i := range raw.MCP {
		if err := raw.MCP[i].Check(); err != nil {
			return nil, errorf("agent: idea: mcp[%d]: %w", i, err)
		}
	}
	idea := &Idea{Schema: raw.Schema, Solution: raw.Solution, Rendering: raw.Rendering, Presets: raw.Presets, MCP: raw.MCP}
	if raw.Context != nil {
		msgs, err := message.ParseContext(raw.Context)
		if err != nil {
			return nil, errorf("agent: idea: context: %w", err)
		}
		idea.Context = msgs
	}
	return idea, nil
}

// The fields of an Idea file, of a preset in it and of an MCP server in
// it, as ParseIdea reads them.
var (
	ideaFields   = jsonFields(reflect.TypeFor[Idea]())
	presetFields = jsonFields(reflect.TypeFor[Preset]())
	mcpFields    = jsonFields(reflect.TypeFor[MCPServer]())
)

// jsonFields returns the JSON names of the fields of struct type t.
func jsonFields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// unknownFields reports the first field of the JSON object data that is
// not one of known, and does the same for each preset and MCP server of
// an Idea (at is where data is: "" for the Idea itself). A key that
// starts with "$" is an annotation, as in JSON Schema, not a misspelt
// field. It only looks at objects: what is not one was reported already.
func unknownFields(data []byte, at string, known []string) error {
	o, err := ojson.Parse(data)
	if err != nil {
		return nil
	}
	for i, k := range o.Keys {
		if strings.HasPrefix(k, "$") {
			continue
		}
		if !slices.Contains(known, k) {
			return errorf("agent: idea: %sunknown field %q (known: %s)", at, k, strings.Join(known, ", "))
		}
		if at != "" {
			continue
		}
		switch k {
		case "presets":
			if ps, err := ojson.Parse(o.Values[i]); err == nil {
				for j, name := range ps.Keys {
					if err := unknownFields(ps.Values[j], fmt.Sprintf("presets[%q]: ", name), presetFields); err != nil {
						return err
					}
				}
			}
		case "mcp":
			var servers []json.RawMessage
			if json.Unmarshal(o.Values[i], &servers) == nil {
				for j, sv := range servers {
					if err := unknownFields(sv, fmt.Sprintf("mcp[%d]: ", j), mcpFields); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// Marshal returns the Idea as the JSON of an Idea file, indented, its
// context in canonical form. ParseIdea reads it back.
func (i *Idea) Marshal() ([]byte, error) {
	if i.Schema == nil {
		return nil, errors.New("agent: idea: no schema")
	}
	for j := range i.MCP {
		if err := i.MCP[j].Check(); err != nil {
			return nil, errorf("agent: idea: mcp[%d]: %w", j, err)
		}
	}
	// Not HTML-escaped: the messages keep the bytes the model wrote and
	// was shown ("<", ">" and "&" in a call), so that a run saved and
	// read back renders as it did, and the prompt cache still reads it.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(i); err != nil {
		return nil, errorf("agent: idea: %w", err)
	}
	return b.Bytes(), nil
}

// Idea returns what the run makes of an Idea with its solution (101): the
// schema it ran with, its whole log as the context, and its last
// solution, ready to save with Marshal.
func (r *RunResult) Idea(schema json.RawMessage) *Idea {
	idea := &Idea{Schema: schema}
	if r.Log != nil {
		idea.Context = r.Log.Messages()
	}
	if r.Solution != nil {
		idea.Solution = bytes.Clone(r.Solution.Raw) // the Idea is the caller's, apart from the result
	}
	return idea
}
