package agent

import "github.com/augceo/agent/message"

// callSlab holds the Calls of a quiet run (see Config.quiet) for the next
// one. A Call is handed to user code only by a Confirm hook, an event
// stream, or an activity that is not a bound function (Bind), a delegate
// or a latent run; a run with none of these is the only one that ever
// holds its Calls, and once it is over they can serve the next run. A run
// that handed one out marks the slab exposed, and the slab's Calls are
// then left to the collector. The parsed outputs of the calls, which the
// log keeps, are never reused: they come in blocks of their own, sized
// after the last run's.
type callSlab struct {
	chunks  [][]Call
	n       int  // Calls taken, over the chunks in order
	exposed bool // a Call may be held outside the package

	stores []message.OutputStore // room for the next outputs
	last   int                   // Calls the last run took
}

// slabChunk is how many Calls a chunk holds: a step of ten calls takes
// one chunk.
const slabChunk = 16

// take returns a zero Call.
func (s *callSlab) take() *Call {
	k, i := s.n/slabChunk, s.n%slabChunk
	if k == len(s.chunks) {
		s.chunks = append(s.chunks, make([]Call, slabChunk))
	}
	s.n++
	return &s.chunks[k][i]
}

// store returns room for a call's output.
func (s *callSlab) store() *message.OutputStore {
	if len(s.stores) == 0 {
		s.stores = make([]message.OutputStore, max(4, s.last-s.n))
	}
	o := &s.stores[0]
	s.stores = s.stores[1:]
	return o
}

// reset readies s for the next run, whose calls have all returned: the
// Calls are cleared for reuse, or forgotten when one may be held
// elsewhere. The run's log keeps the outputs' room.
func (s *callSlab) reset() {
	if s.exposed {
		*s = callSlab{last: s.n}
		return
	}
	s.stores, s.last = nil, s.n
	for k := 0; k*slabChunk < s.n; k++ {
		clear(s.chunks[k])
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
