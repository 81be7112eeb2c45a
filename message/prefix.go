package message

import (
	"bytes"
	"reflect"
)

// Prefix is the first messages of a log, frozen: the log may grow, the
// messages of a Prefix do not change. A cache keyed by contexts holds one
// to tell whether a later log starts the same way.
type Prefix struct {
	msgs   entries
	frozen bool // msgs is one chunk of its own, exactly its messages: see Freeze
}

// Prefix returns the messages of l so far.
func (l *Log) Prefix() Prefix {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return Prefix{msgs: l.msgs} // a copy of entries is a snapshot (see entries)
}

// Head returns the first n messages of p (all of them if it has fewer).
func (p Prefix) Head(n int) Prefix {
	h := p
	h.msgs.n = min(max(n, 0), p.msgs.n)
	return h
}

// maxFrozen bounds the messages Freeze copies: a long chat's every turn
// would otherwise copy its whole context once more.
const maxFrozen = 256

// Freeze returns p with its messages copied to memory of their own, sized
// to them, for logs made by [Prefix.NewLog] to share: the log p was taken
// from may go on writing after them. A prefix of more than a few hundred
// messages, or of none, is returned as it is.
func (p Prefix) Freeze() Prefix {
	n := p.msgs.n
	if p.frozen || n == 0 || n > maxFrozen {
		return p
	}
	own := make([]entry, n)
	for i := range own {
		own[i] = *p.msgs.at(i) // what an entry points to never changes
	}
	return Prefix{msgs: entries{first: own, n: n}, frozen: true}
}

// NewLog returns a log holding msgs, as the function NewLog does, which
// shares the messages of p, frozen, when msgs starts with them, rather
// than copy them: a registry keeps the first messages of recent runs,
// and runs of one agent start with the same ones. ok is false, and the
// log nil, when p is not frozen or msgs does not start with it.
func (p Prefix) NewLog(msgs ...Message) (l *Log, ok bool, err error) {
	n := p.msgs.n
	if !p.frozen || len(msgs) < n {
		return nil, false, nil
	}
	// The last first: the cached contexts of one agent differ at their
	// end, in what each run asked.
	if n > 0 && !holds(p.msgs.at(n-1), &msgs[n-1]) {
		return nil, false, nil
	}
	for i := range n - 1 {
		if !holds(p.msgs.at(i), &msgs[i]) {
			return nil, false, nil
		}
	}
	l = newLog()
	// The chunk is exactly p's messages: the log appends past it, in
	// chunks of its own.
	l.msgs.first, l.msgs.n = p.msgs.first[:n:n], n
	for i := range n {
		if e := &p.msgs.first[i]; e.isData() {
			m := e.message()
			w, err := writeOf(&m) // checked when p's log took it: cannot fail
			if err != nil {
				return nil, true, at(i, err)
			}
			if err := l.index(i, &m, w); err != nil {
				return nil, true, at(i, err)
			}
		}
	}
	if err := l.Append(msgs[n:]...); err != nil {
		return nil, true, err
	}
	return l, true, nil
}

// holds reports whether e holds the message m, as sameEntry compares
// them, without packing m.
func holds(e *entry, m *Message) bool {
	if e.rest != nil {
		return sameMessage(e.rest, m)
	}
	if m.Type != entryTypes[e.typ] || m.Instance != e.instance || !inline(m) {
		return false
	}
	switch e.typ {
	case eTool:
		return sameRaw(e.data.get(), m.Tool)
	case ePlan:
		return sameRaw(e.data.get(), m.Plan)
	case eMeta:
		return sameRaw(e.data.get(), m.Meta)
	case eText:
		return e.kind == string(m.Role) && e.date == m.Text
	}
	return e.kind == m.Kind && e.date == m.Date && methods[e.method] == m.Method && e.outputPath == m.OutputPath &&
		sameRaw(e.data.get(), m.Data) && sameRaw(e.call.get(), m.Call)
}

// Len returns the number of messages in p.
func (p Prefix) Len() int { return p.msgs.n }

// HasPrefix reports whether l starts with the messages of p.
func (l *Log) HasPrefix(p Prefix) bool {
	mine := l.Prefix() // no lock is held while comparing: entries never change
	n := p.msgs.n
	if mine.msgs.n < n {
		return false
	}
	// The last first: prefixes of one agent's runs differ at their end.
	if n > 0 && !sameEntry(mine.msgs.at(n-1), p.msgs.at(n-1)) {
		return false
	}
	for i := range n - 1 {
		if !sameEntry(mine.msgs.at(i), p.msgs.at(i)) {
			return false
		}
	}
	return true
}

// sameEntry reports whether two entries hold equal messages. What an
// entry derives from its message (written, target) is not compared.
func sameEntry(a, b *entry) bool {
	if a == b {
		return true
	}
	if a.rest != nil || b.rest != nil {
		return a.rest != nil && b.rest != nil && sameMessage(a.rest, b.rest)
	}
	return a.typ == b.typ && a.kind == b.kind && a.instance == b.instance && a.date == b.date &&
		a.method == b.method && a.outputPath == b.outputPath &&
		sameRaw(a.data.get(), b.data.get()) && sameRaw(a.call.get(), b.call.get())
}

// sameMessage reports whether two messages are equal field by field.
func sameMessage(a, b *Message) bool {
	return a.Type == b.Type && a.Role == b.Role && a.Text == b.Text && a.Kind == b.Kind && a.Instance == b.Instance &&
		a.Description == b.Description && a.Error == b.Error && a.Date == b.Date && a.Method == b.Method &&
		a.OutputPath == b.OutputPath &&
		sameRaw(a.Schema, b.Schema) && sameRaw(a.Data, b.Data) && sameRaw(a.Tool, b.Tool) && sameRaw(a.Plan, b.Plan) &&
		sameRaw(a.Meta, b.Meta) && sameRaw(a.Failed, b.Failed) && sameRaw(a.Call, b.Call) && sameRaw(a.Extra, b.Extra) &&
		(a.Advisor == b.Advisor || a.Advisor != nil && b.Advisor != nil && reflect.DeepEqual(*a.Advisor, *b.Advisor))
}

// sameRaw is bytes.Equal that also tells nil (absent) from empty.
func sameRaw(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
