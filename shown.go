package agent

import (
	"slices"

	"github.com/augceo/agent/message"
)

// shown records the data identities a Build rendered, each with where its
// block went when a loop carries the Build on (see prepared.extend). A
// request shows a handful: a scan beats hashing two strings per lookup,
// and a fork shares the list, since an entry never changes once added and
// an append to a clipped list copies it. A long list is indexed by a map,
// which each fork makes again when it needs one.
type shown struct {
	list  []shownData
	index map[message.Identity]int // into list, once it is longer than shownScan
}

// shownData is one identity a Build rendered.
type shownData struct {
	id      message.Identity
	block   block
	carried bool // block is set: the Build is carried from step to step
}

// shownScan is how many identities a lookup scans before it hashes.
const shownScan = 16

// find returns the position of id in s.list, or -1.
func (s *shown) find(id message.Identity) int {
	if len(s.list) <= shownScan {
		for i := range s.list {
			if s.list[i].id == id {
				return i
			}
		}
		return -1
	}
	if s.index == nil {
		s.index = make(map[message.Identity]int, len(s.list))
		for i := range s.list {
			s.index[s.list[i].id] = i
		}
	}
	if i, ok := s.index[id]; ok {
		return i
	}
	return -1
}

// has reports whether id was rendered.
func (s *shown) has(id message.Identity) bool { return s.find(id) >= 0 }

// blockOf returns where the block of id went, when it was recorded.
func (s *shown) blockOf(id message.Identity) (block, bool) {
	if i := s.find(id); i >= 0 && s.list[i].carried {
		return s.list[i].block, true
	}
	return block{}, false
}

// add records id, not rendered before, and its block when carried.
func (s *shown) add(id message.Identity, bl block, carried bool) {
	s.list = append(s.list, shownData{id: id, block: bl, carried: carried})
	if s.index != nil {
		s.index[id] = len(s.list) - 1
	}
}

// fork returns a copy of s that shares its entries: an add to either
// leaves the other as it was.
func (s *shown) fork() shown { return shown{list: slices.Clip(s.list)} }
