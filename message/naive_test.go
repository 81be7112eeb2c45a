package message

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/augceo/agent/ref"
)

// naive resolves references by the definition, scanning the whole history
// on every lookup. It is the oracle the indexed Log must agree with.
type naive struct {
	msgs     []Message
	instance string
}

func (n naive) Lookup(kind string, path ref.Path) (json.RawMessage, error) {
	var ierr error
	if n.instance != "" {
		v, err, known := n.scan(kind, n.instance, path)
		if known {
			if err == nil || !errors.Is(err, ref.ErrNotFound) {
				return v, err
			}
			ierr = err
		}
	}
	v, err, known := n.scan(kind, "", path)
	if !known {
		if ierr != nil {
			return nil, ierr
		}
		return nil, &ref.Error{Offset: -1, Err: fmt.Errorf("%w %q", ref.ErrUnknownKind, kind)}
	}
	return v, err
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
