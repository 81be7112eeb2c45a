package agent

import "github.com/augceo/agent/message"

// callSlab holds the Calls of a quiet run (see Config.quiet) for the next
// one. A Call is handed to user code only by a Confirm hook, an event
// stream, or an activity that is not a bound function (Bind), a delegate
// or a latent run; a run with none of these is the only one that ever
// holds its Calls, and once it is over they can serve the next run. A run
// that handed one out marks the slab exposed, and the slab's Calls are
// then left to the collector. Each Call has room for its parsed output
// next to it, reused with it: the log keeps nothing of a parsed output
// (see message.Log.AppendOutput).
type callSlab struct {
	chunks  [][]Call
	stores  [][]message.OutputStore // the outputs' room, chunk for chunk
	n       int                     // Calls taken, over the chunks in order
	exposed bool                    // a Call may be held outside the package
}

// slabChunk is how many Calls a chunk holds: a step of ten calls takes
// one chunk.
const slabChunk = 16

// take returns a zero Call with room for its output.
func (s *callSlab) take() *Call {
	k, i := s.n/slabChunk, s.n%slabChunk
	if k == len(s.chunks) {
		s.chunks = append(s.chunks, make([]Call, slabChunk))
		s.stores = append(s.stores, make([]message.OutputStore, slabChunk))
	}
	s.n++
	c := &s.chunks[k][i]
	c.outStore = &s.stores[k][i]
	return c
}

// reset readies s for the next run, whose calls have all returned: the
// Calls are cleared for reuse, or forgotten when a Call may be held
// elsewhere. The outputs' room is not cleared: parsing an output writes
// all it reads of it, and clearing costs a write barrier per pointer
// while the collector marks. What it still points to, until the next
// run parses over it, is the text of this run's calls.
func (s *callSlab) reset() {
	if s.exposed {
		*s = callSlab{}
		return
	}
	for k := 0; k*slabChunk < s.n; k++ {
		used := min(s.n-k*slabChunk, slabChunk) // clear no more than was taken
		clear(s.chunks[k][:used])
	}
	s.n = 0
}

// keepsNoCall reports whether running c on a holds on to c for no longer
// than the run: a bound function's activity, which hands its function
// only the decoded parameters.
func keepsNoCall(c *Call, a Activity) bool {
	_, ok := a.(*bound)
	return ok && c.delegate() == ""
}
