package message

import "testing"

// TestEntries checks that positions fill the chunks in order, each to
// its size, and that a snapshot is not changed by later appends.
func TestEntries(t *testing.T) {
	var s entries
	var snap entries
	for p := range 3*chunkMax + 10 {
		if p == 100 {
			snap = s
		}
		k, off := locate(p)
		if k > len(s.chunks) || (k < len(s.chunks) && off >= len(s.chunks[k])) {
			t.Fatalf("locate(%d) = %d, %d with %d chunks", p, k, off, len(s.chunks))
		}
		if k == len(s.chunks) && off != 0 {
			t.Fatalf("locate(%d) = %d, %d starts a chunk past its start", p, k, off)
		}
		if k < len(s.chunks) && off != 0 {
			if pk, poff := locate(p - 1); pk != k || poff != off-1 {
				t.Fatalf("locate(%d) = %d, %d after %d, %d", p, k, off, pk, poff)
			}
		}
		s.append(entry{kind: string(rune('a' + p%26))})
	}
	for p := range s.n {
		if got := s.at(p).kind; got != string(rune('a'+p%26)) {
			t.Fatalf("at(%d) = %q", p, got)
		}
	}
	for i, c := range s.chunks {
		if want := min(max(chunkMin, chunkMin<<i>>1), chunkMax); len(c) != want {
			t.Errorf("chunk %d holds %d, want %d", i, len(c), want)
		}
	}
	if snap.n != 100 || snap.at(99).kind != string(rune('a'+99%26)) {
		t.Errorf("snapshot changed: %d entries", snap.n)
	}
}
