package message

import (
	"encoding/json"

	"github.com/augceo/agent/ref"
)

// naive resolves references by the definition, scanning the whole history
// on every lookup. It is the oracle the indexed Log must agree with.
type naive struct {
	msgs     []Message
	instance string
}

func (n naive) Lookup(kind string, path ref.Path) (json.RawMessage, error) {
	return instanceLookup(kind, n.instance, path, func(p ref.Path) (json.RawMessage, error, bool) {
		if n.instance == "" {
			return nil, nil, false
		}
		return n.scan(kind, n.instance, p)
	}, func(p ref.Path) (json.RawMessage, error, bool) {
		return n.scan(kind, "", p)
	})
}

func (n naive) scan(kind, instance string, path ref.Path) (json.RawMessage, error, bool) {
	known := false
	var ws []write // oldest first, as fold takes them
	for i := range n.msgs {
		m := &n.msgs[i]
		if m.Type != TypeData || m.Kind != kind || m.Instance != instance {
			continue
		}
		known = true
		w, _, err := writeOf(m)
		if err != nil {
			panic(err)
		}
		if w.data != nil {
			ws = append(ws, w)
		}
	}
	if !known {
		return nil, nil, false
	}
	v, err := fold(ws, path)
	return v, err, true
}
