package message

import (
	"encoding/json"
	"fmt"
	"math/bits"

	"github.com/augceo/agent/ref"
)

// entry is a message as a Log keeps it: the fields of data and output
// messages inline, a whole message that sets any other field behind a
// pointer. An entry is less than half the size of a Message.
type entry struct {
	typ        Type
	kind       string
	instance   string
	data       json.RawMessage
	call       json.RawMessage
	date       string
	method     ref.Method
	outputPath string
	written    json.RawMessage
	target     *target
	rest       *Message // the message, when it sets a field not above
}

func pack(m *Message) entry {
	if m.Role != "" || m.Text != "" || m.Description != "" || m.Schema != nil || m.Tool != nil || m.Plan != nil ||
		m.Meta != nil || m.Advisor != nil || m.Failed != nil || m.Error != "" || m.Extra != nil {
		c := *m
		return entry{rest: &c}
	}
	return entry{typ: m.Type, kind: m.Kind, instance: m.Instance, data: m.Data, call: m.Call, date: m.Date,
		method: m.Method, outputPath: m.OutputPath, written: m.written, target: m.target}
}

func (e *entry) message() Message {
	if e.rest != nil {
		return *e.rest
	}
	return Message{Type: e.typ, Kind: e.kind, Instance: e.instance, Data: e.data, Call: e.call, Date: e.date,
		Method: e.method, OutputPath: e.outputPath, written: e.written, target: e.target}
}

func (e *entry) isData() bool {
	if e.rest != nil {
		return e.rest.Type == TypeData
	}
	return e.typ == TypeData
}

func (e *entry) identity() Identity {
	if e.rest != nil {
		return e.rest.Identity()
	}
	return Identity{Kind: e.kind, Instance: e.instance}
}

// entries is a list of entries that grows without moving them: in
// chunks of 16, 16, 32, 64 ... up to chunkMax entries, then chunkMax
// each. A copy of the value is a snapshot that stays valid while the
// list grows, since an entry, once appended, is never written again.
type entries struct {
	chunks [][]entry // each of its full size
	n      int
}

const (
	chunkMin  = 16
	chunkMax  = 4096 // chunkMin << (chunkLog - 1)
	chunkLog  = 9
	chunkBits = 12 // log2(chunkMax)
)

// locate returns the chunk and the offset of position p.
func locate(p int) (int, int) {
	switch {
	case p < chunkMin:
		return 0, p
	case p < chunkMax:
		k := bits.Len(uint(p / chunkMin))
		return k, p - chunkMin<<(k-1)
	}
	return chunkLog - 1 + p>>chunkBits, p & (chunkMax - 1)
}

func (s *entries) append(e entry) {
	k, off := locate(s.n)
	if k == len(s.chunks) {
		size := chunkMax
		if k < chunkLog {
			size = max(chunkMin, chunkMin<<k>>1)
		}
		s.chunks = append(s.chunks, make([]entry, size))
	}
	s.chunks[k][off] = e
	s.n++
}

func (s *entries) at(p int) *entry {
	if p < 0 || p >= s.n {
		panic(fmt.Sprintf("message: log index %d out of range [0:%d]", p, s.n))
	}
	k, off := locate(p)
	return &s.chunks[k][off]
}
