package agent

import (
	"testing"

	"github.com/augceo/agent/message"
)

// TestCallSlab checks that a slab hands out distinct zero Calls, gives
// the same memory to the next run when no Call left the package, and
// fresh memory when one may have.
func TestCallSlab(t *testing.T) {
	var s callSlab
	seen := map[*Call]bool{}
	var first []*Call
	for i := range 2*slabChunk + 3 {
		c := s.take()
		if seen[c] || c.Tool != "" {
			t.Fatalf("call %d: taken twice or not zero", i)
		}
		seen[c] = true
		c.Tool, c.Raw = "t", []byte(`{}`)
		first = append(first, c)
	}
	s.reset()
	for i, want := range first {
		if c := s.take(); c != want || c.Tool != "" || c.Raw != nil {
			t.Fatalf("after reset, call %d: %p (tool %q), want %p cleared", i, c, c.Tool, want)
		}
	}
	// Room for outputs is never handed out twice, even across runs.
	stores := map[*message.OutputStore]bool{}
	for range 3 {
		for range 2*slabChunk + 3 {
			o := s.store()
			if stores[o] {
				t.Fatal("an output's room was handed out twice")
			}
			stores[o] = true
		}
		s.reset()
	}
	s.exposed = true
	s.reset()
	if c := s.take(); seen[c] || s.exposed {
		t.Fatal("an exposed slab's calls were reused")
	}
}
