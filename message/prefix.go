package message

import (
	"bytes"
	"reflect"
)

// Prefix is the first messages of a log, frozen: the log may grow, the
// messages of a Prefix do not change. A cache keyed by contexts holds one
// to tell whether a later log starts the same way.
type Prefix struct {
	msgs entries
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

// Len returns the number of messages in p.
func (p Prefix) Len() int { return p.msgs.n }

// HasPrefix reports whether l starts with the messages of p.
func (l *Log) HasPrefix(p Prefix) bool {
	mine := l.Prefix() // no lock is held while comparing: entries never change
	if mine.msgs.n < p.msgs.n {
		return false
	}
	for i := range p.msgs.n {
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
		sameRaw(a.data, b.data) && sameRaw(a.call, b.call)
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
