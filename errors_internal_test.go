package agent

import (
	"errors"
	"strings"
	"testing"
)

// panicky is an error whose Error method panics on a nil receiver.
type panicky struct{ text string }

func (p *panicky) Error() string { return p.text }

// TestErrorf: a wrapped error of this package says its prefix no more,
// errors.Is and errors.As still reach it, and an error whose Error method
// panics is left to fmt.
func TestErrorf(t *testing.T) {
	err := errorf("agent: step %d: %w", 2, errorf("agent: continue x: %w", ErrNoProvider))
	if got, want := err.Error(), "agent: step 2: continue x: no provider"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if !errors.Is(err, ErrNoProvider) {
		t.Error("errors.Is does not reach the wrapped error")
	}
	me := &MessageError{Index: 1, Type: "x", Err: ErrUnknownType}
	err = errorf("agent: context: %w", me)
	if got, ok := errors.AsType[*MessageError](err); !ok || got != me || !strings.HasSuffix(err.Error(), "context: message 1 (x): no handler for message type") {
		t.Errorf("%q: errors.As %v", err, ok)
	}
	if got := errorf("agent: other: %w", errors.New("provider: boom")).Error(); got != "agent: other: provider: boom" {
		t.Errorf("another package's error changed: %q", got)
	}
	var typedNil *panicky
	if got := errorf("agent: odd: %w", typedNil).Error(); !strings.HasPrefix(got, "agent: odd: ") {
		t.Errorf("a typed nil: %q", got)
	}
}
