package message

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/augceo/agent/ref"
)

// entry is a message as a Log keeps it, under two fifths of the size of
// a Message: data and output messages, and tool, plan, meta and text
// messages that set nothing else, inline; any other message behind a
// pointer. The fields an inline message does not use hold, by type:
//
//	tool, plan, meta: data is the Tool, Plan or Meta payload
//	text:             kind is the Role, date the Text
//
// The type and the method are kept as small codes, and the written value
// (always within the data) as its place there: a log's first chunk of
// entries is its largest allocation.
type entry struct {
	kind       string
	instance   string
	data       raw
	call       raw
	date       string
	outputPath string
	rest       *Message // the message, when it is not inline
	wOff, wLen uint32   // written is data[wOff:wOff+wLen]; wLen 0: nil
	typ        entryType
	method     uint8 // an index in methods
}

// raw is a json.RawMessage as an entry keeps it: in two words, not three,
// its capacity its length. nil stays nil, and empty empty.
type raw struct {
	p *byte
	n int
}

func rawOf(b []byte) raw { return raw{unsafe.SliceData(b), len(b)} }

func (r raw) get() json.RawMessage {
	if r.p == nil {
		return nil
	}
	return unsafe.Slice(r.p, r.n)
}

// entryType codes the types of inline messages.
type entryType uint8

const (
	eNone entryType = iota
	eData
	eTool
	ePlan
	eMeta
	eText
)

// entryTypes are the types of the codes.
var entryTypes = [...]Type{eNone: "", eData: TypeData, eTool: TypeTool, ePlan: TypePlan, eMeta: TypeMeta, eText: TypeText}

// methods are the output methods an inline message can have.
var methods = [...]ref.Method{"", ref.MethodSet, ref.MethodMerge, ref.MethodAssign, ref.MethodPush, ref.MethodConcat}

// methodCode returns the index of m in methods.
func methodCode(m ref.Method) (uint8, bool) {
	for i, x := range methods {
		if x == m {
			return uint8(i), true
		}
	}
	return 0, false
}

// writtenAt returns where written lies in data; ok is false when it
// does not lie there.
func writtenAt(data, written []byte) (off, n uint32, ok bool) {
	if written == nil {
		return 0, 0, true
	}
	if len(written) == 0 || len(data) == 0 || len(data) > 1<<31 {
		return 0, 0, false
	}
	d := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	w := uintptr(unsafe.Pointer(unsafe.SliceData(written)))
	if w < d || w-d+uintptr(len(written)) > uintptr(len(data)) {
		return 0, 0, false
	}
	return uint32(w - d), uint32(len(written)), true
}

// inline reports whether m fits an entry without rest.
func inline(m *Message) bool {
	if m.Description != "" || m.Schema != nil || m.Advisor != nil || m.Failed != nil || m.Error != "" || m.Extra != nil {
		return false
	}
	noOutput := m.Kind == "" && m.Data == nil && m.Call == nil && m.Date == "" && m.Method == "" && m.OutputPath == "" &&
		m.written == nil && m.target == nil
	switch m.Type {
	case TypeData:
		if _, ok := methodCode(m.Method); !ok {
			return false
		}
		if _, _, ok := writtenAt(m.Data, m.written); !ok {
			return false
		}
		return m.Role == "" && m.Text == "" && m.Tool == nil && m.Plan == nil && m.Meta == nil
	case TypeTool:
		return noOutput && m.Role == "" && m.Text == "" && m.Plan == nil && m.Meta == nil
	case TypePlan:
		return noOutput && m.Role == "" && m.Text == "" && m.Tool == nil && m.Meta == nil
	case TypeMeta:
		return noOutput && m.Role == "" && m.Text == "" && m.Tool == nil && m.Plan == nil
	case TypeText:
		return noOutput && m.Tool == nil && m.Plan == nil && m.Meta == nil
	}
	return false
}

// pack fills e, a zero entry, with m. A message that is not inline is
// copied to *rest, which e then points to. It sets e's fields one by one:
// copying a whole entry into the log would shade all its pointers while
// the collector marks.
func (e *entry) pack(m *Message, rest *Message) {
	if !inline(m) {
		*rest = *m
		rest.target = nil // the log keeps nothing of a parsed output (see Log.Append)
		e.rest = rest
		return
	}
	e.instance = m.Instance
	switch m.Type {
	case TypeTool:
		e.typ, e.data = eTool, rawOf(m.Tool)
	case TypePlan:
		e.typ, e.data = ePlan, rawOf(m.Plan)
	case TypeMeta:
		e.typ, e.data = eMeta, rawOf(m.Meta)
	case TypeText:
		e.typ, e.kind, e.date = eText, string(m.Role), m.Text
	default:
		e.method, _ = methodCode(m.Method)
		e.wOff, e.wLen, _ = writtenAt(m.Data, m.written)
		e.typ, e.kind, e.data, e.call, e.date, e.outputPath = eData, m.Kind, rawOf(m.Data), rawOf(m.Call), m.Date, m.OutputPath
	}
}

func (e *entry) message() Message {
	var m Message
	e.fill(&m)
	return m
}

// written returns the written value of an inline data entry.
func (e *entry) written() json.RawMessage {
	if e.wLen == 0 {
		return nil
	}
	return e.data.get()[e.wOff : e.wOff+e.wLen : e.wOff+e.wLen]
}

// fill sets *m, a zero Message, to the message of e: in place, since a
// Message is large.
func (e *entry) fill(m *Message) {
	if e.rest != nil {
		*m = *e.rest
		return
	}
	m.Type, m.Instance = entryTypes[e.typ], e.instance
	switch e.typ {
	case eTool:
		m.Tool = e.data.get()
	case ePlan:
		m.Plan = e.data.get()
	case eMeta:
		m.Meta = e.data.get()
	case eText:
		m.Role, m.Text = Role(e.kind), e.date
	default:
		m.Kind, m.Data, m.Call, m.Date, m.Method, m.OutputPath, m.written =
			e.kind, e.data.get(), e.call.get(), e.date, methods[e.method], e.outputPath, e.written()
	}
}

func (e *entry) typeOf() Type {
	if e.rest != nil {
		return e.rest.Type
	}
	return entryTypes[e.typ]
}

func (e *entry) isData() bool { return e.typeOf() == TypeData }

func (e *entry) identity() Identity {
	switch {
	case e.rest != nil:
		return e.rest.Identity()
	case e.typ != eData:
		return Identity{Instance: e.instance} // as Message.Identity: kind is not set
	}
	return Identity{Kind: e.kind, Instance: e.instance}
}

// entries is a list of entries that grows without moving them: in a
// first chunk sized when the list starts, then chunks of 16, 32, 64 ...
// up to chunkMax entries, then chunkMax each. A copy of the value is a
// snapshot that stays valid while the list grows, since an entry, once
// appended, is never written again.
type entries struct {
	first []entry   // the first chunk, of its full size
	rest  [][]entry // the chunks after it, each of its full size
	n     int
}

const (
	chunkMin  = 16
	chunkMax  = 4096 // chunkMin << (restLog - 1)
	chunkBits = 12   // log2(chunkMax)
	restLog   = 9    // how many chunks after the first double in size
	restStart = chunkMin * (1<<restLog - 1)
)

// reserve sizes the first chunk of an empty list for n entries and as
// many again: a log made from a context grows by about as much in a run.
func (s *entries) reserve(n int) {
	if s.first == nil && n > 0 {
		s.first = make([]entry, min(max(chunkMin, 2*n), chunkMax))
	}
}

// locate returns the chunk (0 for the first) and the offset of position p.
func (s *entries) locate(p int) (int, int) {
	if p < len(s.first) {
		return 0, p
	}
	k, off := locateRest(p - len(s.first))
	return 1 + k, off
}

// locateRest returns the chunk of rest and the offset in it of the
// entry q places past the first chunk.
func locateRest(q int) (int, int) {
	if q < restStart {
		k := bits.Len(uint(q/chunkMin+1)) - 1
		return k, q - chunkMin*(1<<k-1)
	}
	q -= restStart
	return restLog + q>>chunkBits, q & (chunkMax - 1)
}

// restSize is the size of chunk k of rest.
func restSize(k int) int {
	if k < restLog {
		return chunkMin << k
	}
	return chunkMax
}

// push returns the next entry, zero, to be filled in place.
func (s *entries) push() *entry {
	if s.first == nil {
		s.first = make([]entry, chunkMin)
	}
	if s.n < len(s.first) {
		s.n++
		return &s.first[s.n-1]
	}
	k, off := locateRest(s.n - len(s.first))
	if k == len(s.rest) {
		if s.rest == nil {
			s.rest = make([][]entry, 0, 4) // room for 240 entries past the first chunk
		}
		s.rest = append(s.rest, make([]entry, restSize(k)))
	}
	s.n++
	return &s.rest[k][off]
}

func (s *entries) at(p int) *entry {
	if p < 0 || p >= s.n {
		panic(fmt.Sprintf("message: log index %d out of range [0:%d]", p, s.n))
	}
	if p < len(s.first) {
		return &s.first[p]
	}
	k, off := locateRest(p - len(s.first))
	return &s.rest[k][off]
}
