package agent

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/augceo/agent/message"
)

// Idea is a saved, reproducible Request (101): the output schema, the
// context, and the solution once there is one.
type Idea struct {
	Schema   json.RawMessage   `json:"schema"`
	Context  []message.Message `json:"context"`
	Solution json.RawMessage   `json:"solution,omitempty"`
	// Rendering is how its runs show data to the model (Config.Rendering);
	// empty means the default, RenderCached.
	Rendering Rendering `json:"rendering,omitempty"`
	// Presets are the Idea's own presets (801), found before a registry's
	// when its context names one (see ExpandPresets).
	Presets map[string]Preset `json:"presets,omitempty"`
}

// ParseIdea reads an Idea file's JSON. Errors name the field and, for the
// context, the message.
func ParseIdea(data []byte) (*Idea, error) {
	var raw struct {
		Schema    json.RawMessage   `json:"schema"`
		Context   json.RawMessage   `json:"context"`
		Solution  json.RawMessage   `json:"solution"`
		Rendering Rendering         `json:"rendering"`
		Presets   map[string]Preset `json:"presets"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("agent: idea must be a JSON object with schema and context, got %s", te.Value)
		}
		return nil, fmt.Errorf("agent: idea: %w", err)
	}
	if raw.Schema == nil {
		return nil, fmt.Errorf("agent: idea: field \"schema\" is missing")
	}
	if err := raw.Rendering.Check(); err != nil {
		return nil, fmt.Errorf("agent: idea: %w", err)
	}
	idea := &Idea{Schema: raw.Schema, Solution: raw.Solution, Rendering: raw.Rendering, Presets: raw.Presets}
	if raw.Context != nil {
		msgs, err := message.ParseContext(raw.Context)
		if err != nil {
			return nil, fmt.Errorf("agent: idea: context: %w", err)
		}
		idea.Context = msgs
	}
	return idea, nil
}

// Marshal returns the Idea as the JSON of an Idea file, indented, its
// context in canonical form. ParseIdea reads it back.
func (i *Idea) Marshal() ([]byte, error) {
	if i.Schema == nil {
		return nil, errors.New("agent: idea: no schema")
	}
	b, err := json.MarshalIndent(i, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("agent: idea: %w", err)
	}
	return append(b, '\n'), nil
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
		idea.Solution = r.Solution.Raw
	}
	return idea
}
