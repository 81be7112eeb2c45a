package agent

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
)

// Offer returns one tool message (002) that offers the model the
// registered tools named, in that order, or every registered tool, by
// name, when none is named: {"type":"tool","tool":{"name":{definition},
// ...}}. A tool that no tool message of the context offers cannot be
// called, whatever the registry holds.
//
// The message holds the definitions as they are registered now, so a
// saved Idea or a durable run keeps them; [message.Tool] names one tool
// instead, whose definition each request reads from the registry. An
// unknown name is an error wrapping [ErrUnknownTool], and so is an empty
// registry.
func (r *Registry) Offer(names ...string) (message.Message, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(r.tools))
		if len(names) == 0 {
			return message.Message{}, fmt.Errorf("%w: Offer: no tool is registered", ErrUnknownTool)
		}
	}
	tools := &ojson.Object{}
	for _, n := range names {
		def, ok := r.tools[strings.TrimPrefix(n, "Tool.")]
		if !ok {
			return message.Message{}, fmt.Errorf("%w %q (%s)", ErrUnknownTool, n, r.registeredTools())
		}
		tools.Set(strings.TrimPrefix(n, "Tool."), def)
	}
	return message.Message{Type: message.TypeTool, Tool: tools.Bytes()}, nil
}
