package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/augceo/agent/message"
)

// ErrUnknownPreset reports a preset message naming no registered preset.
var ErrUnknownPreset = errors.New("agent: unknown preset")

// Preset is a reusable bundle (801): context messages, which stand where
// a {"type":"preset","preset":"Name"} message names it, and request
// settings, which apply from there on (a later message may change them
// again). Presets compose agent behaviours, a council of advisors or a
// persona, without setup code.
type Preset struct {
	Messages    []message.Message `json:"messages,omitempty"`
	Model       string            `json:"model,omitempty"`
	Temperature *float64          `json:"temperature,omitempty"`
	MaxTokens   int               `json:"maxTokens,omitempty"`
	Thinking    int               `json:"thinking,omitempty"`
}

// clone returns a copy of p that shares no memory with it.
func (p Preset) clone() Preset {
	p.Messages = slices.Clone(p.Messages)
	for i := range p.Messages {
		p.Messages[i] = p.Messages[i].Clone()
	}
	if p.Temperature != nil {
		t := *p.Temperature
		p.Temperature = &t
	}
	return p
}

// presetUse is what a preset message holds once expanded: its name and
// the settings, so the log says what applied without the registry.
type presetUse struct {
	Preset      string   `json:"preset"`
	Expanded    bool     `json:"expanded,omitempty"`
	Model       string   `json:"model,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"maxTokens,omitempty"`
	Thinking    int      `json:"thinking,omitempty"`
}

// Preset registers p under name. A duplicate or empty name panics.
func (r *Registry) Preset(name string, p Preset) {
	if name == "" {
		panic("agent: Preset with an empty name")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.presets == nil {
		r.presets = map[string]Preset{}
	}
	if _, ok := r.presets[name]; ok {
		panic(fmt.Sprintf("agent: preset %q is already registered", name))
	}
	r.presets[name] = p.clone() // the caller's to change after
}

// lookupPreset returns the preset called name: from local (an Idea's own)
// first, then the registry.
func (r *Registry) lookupPreset(name string, local map[string]Preset) (Preset, error) {
	if p, ok := local[name]; ok {
		return p, nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if p, ok := r.presets[name]; ok {
		return p, nil
	}
	names := slices.Sorted(maps.Keys(r.presets))
	for n := range local {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return Preset{}, fmt.Errorf("%w %q (no preset is registered)", ErrUnknownPreset, name)
	}
	return Preset{}, fmt.Errorf("%w %q (presets: %s)", ErrUnknownPreset, name, strings.Join(names, ", "))
}

// maxPresetDepth bounds presets that name presets.
const maxPresetDepth = 8

// ExpandPresets returns msgs with each preset message expanded in place:
// the message, marked expanded and holding the preset's settings, then
// the preset's messages (their own presets expanded in turn). local holds
// presets of an Idea file, found before the registry's. A preset message
// expanded already is left as it is, so a journaled context is not
// expanded twice. An unknown preset, or presets that name each other in a
// loop, is an error naming the message.
func ExpandPresets(reg *Registry, local map[string]Preset, msgs []message.Message) ([]message.Message, error) {
	if reg == nil {
		reg = DefaultRegistry
	}
	if !slices.ContainsFunc(msgs, func(m message.Message) bool { return m.Type == message.TypePreset }) || !reg.builtinType(message.TypePreset) {
		return msgs, nil // none, or the user handles presets their own way
	}
	return expandPresets(reg, local, msgs, nil)
}

func expandPresets(reg *Registry, local map[string]Preset, msgs []message.Message, within []string) ([]message.Message, error) {
	var out []message.Message
	for i, m := range msgs {
		if m.Type != message.TypePreset {
			out = append(out, m)
			continue
		}
		var use presetUse
		if err := json.Unmarshal(m.Extra, &use); err != nil || use.Preset == "" {
			return nil, &MessageError{Index: i, Type: string(m.Type), Err: errors.New(`a preset message names its preset: {"type":"preset","preset":"Name"}`)}
		}
		if use.Expanded {
			out = append(out, m)
			continue
		}
		if slices.Contains(within, use.Preset) || len(within) >= maxPresetDepth {
			return nil, &MessageError{Index: i, Type: string(m.Type), Err: fmt.Errorf("preset %q names itself through %s", use.Preset, strings.Join(within, " → "))}
		}
		p, err := reg.lookupPreset(use.Preset, local)
		if err != nil {
			return nil, &MessageError{Index: i, Type: string(m.Type), Err: err}
		}
		inner, err := expandPresets(reg, local, p.clone().Messages, append(within, use.Preset)) // handed out: the caller's
		if err != nil {
			return nil, err
		}
		use = presetUse{Preset: use.Preset, Expanded: true, Model: p.Model, Temperature: p.Temperature, MaxTokens: p.MaxTokens, Thinking: p.Thinking}
		marker := m
		if marker.Extra, err = json.Marshal(use); err != nil {
			return nil, err
		}
		out = append(append(out, marker), inner...)
	}
	return out, nil
}

// applyPreset is the handler of an expanded preset message: its settings
// apply to the request; its messages follow it in the context.
func applyPreset(_ context.Context, b *Build, m *message.Message) error {
	var use presetUse
	if err := json.Unmarshal(m.Extra, &use); err != nil || !use.Expanded {
		return fmt.Errorf("preset %q was not expanded: run the context through ExpandPresets", use.Preset)
	}
	if use.Model != "" {
		b.LLM.Model = use.Model
	}
	if use.Temperature != nil {
		t := *use.Temperature
		b.LLM.Temperature = &t
	}
	if use.MaxTokens != 0 {
		b.LLM.MaxTokens = use.MaxTokens
	}
	if use.Thinking != 0 {
		b.LLM.Thinking = use.Thinking
	}
	return nil
}
