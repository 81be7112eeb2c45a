package agent

import (
	"fmt"
	"testing"

	"github.com/augceo/agent/message"
)

// TestShownIndexed checks lookups past the scan, where a map indexes the
// identities, in a Build and its forks.
func TestShownIndexed(t *testing.T) {
	var s shown
	id := func(i int) message.Identity { return message.Identity{Kind: "k", Instance: fmt.Sprint(i)} }
	const n = 3 * shownScan
	for i := range n {
		if s.has(id(i)) {
			t.Fatalf("%d shown before it was added", i)
		}
		s.add(id(i), block{msg: i, index: 10 * i}, i%2 == 0)
	}
	f := s.fork()
	f.add(id(n), block{msg: n}, true)
	s.add(id(n+1), block{msg: n + 1}, true)
	for i := range n + 2 {
		bl, ok := s.blockOf(id(i))
		wantOK := i%2 == 0 && i < n || i == n+1
		if s.has(id(i)) != (i != n) || ok != wantOK || ok && bl.msg != i {
			t.Errorf("original: %d shown %v, block %+v %v", i, s.has(id(i)), bl, ok)
		}
		bl, ok = f.blockOf(id(i))
		wantOK = i%2 == 0 && i < n || i == n
		if f.has(id(i)) != (i != n+1) || ok != wantOK || ok && bl.msg != i {
			t.Errorf("fork: %d shown %v, block %+v %v", i, f.has(id(i)), bl, ok)
		}
	}
}
