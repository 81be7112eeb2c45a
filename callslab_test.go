package agent

import (
	"reflect"
	"testing"

	"github.com/augceo/agent/message"
)

// TestCallSlab checks that a slab hands out distinct zero Calls, each
// with room of its own for its output, gives the same memory to the next
// run when no Call left the package, and fresh memory when one may have.
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
	stores := map[*message.OutputStore]*Call{}
	for _, c := range first {
		if c.outStore == nil || stores[c.outStore] != nil {
			t.Fatal("a call has no room for its output, or shares another's")
		}
		stores[c.outStore] = c
		if _, err := message.ParseOutputIn(message.CallMeta{Tool: "t", OutputPath: "†state.a.b"}, c.outStore); err != nil {
			t.Fatal(err)
		}
	}
	s.reset()
	for i, want := range first {
		c := s.take()
		if c != want || c.Tool != "" || c.Raw != nil {
			t.Fatalf("after reset, call %d: %p (tool %q), want %p cleared", i, c, c.Tool, want)
		}
		if stores[c.outStore] != c {
			t.Fatalf("after reset, call %d has room %p, not its own", i, c.outStore)
		}
		// The room is not cleared: parsing into it again gives what a fresh
		// parse gives (see message.TestParseOutputInDirtyStore).
		got, err := message.ParseOutputIn(message.CallMeta{Tool: "t", OutputPath: "†x"}, c.outStore)
		want, _ := message.ParseOutput(message.CallMeta{Tool: "t", OutputPath: "†x"})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("after reset, call %d's room parses %+v, %v", i, got, err)
		}
	}
	s.exposed = true
	s.reset()
	if c := s.take(); seen[c] || s.exposed {
		t.Fatal("an exposed slab's calls were reused")
	}
}
