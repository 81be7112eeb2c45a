package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/augceo/agent/ref"
)

// Log is an append-only list of messages with an index of the data they
// write. Each data identity (kind and instance) keeps its value
// materialised, so a lookup walks the path in that value instead of
// scanning the history; writes that do not combine (a push onto a string,
// say) are remembered, and lookups that touch them fall back to the
// reference scan so they report the same error it would.
//
// The log keeps its own copy of every message appended, and every message
// or value it returns is a fresh copy: changing either side never changes
// the other.
//
// A Log is safe for concurrent use. The zero Log is empty and ready.
type Log struct {
	mu        sync.RWMutex
	msgs      []*Message // never changed once appended; All reads them unlocked
	views     map[Identity]*view
	instances []string        // the instances of its data messages, in order of first appearance
	instance  map[string]bool // the same, as a set
}

// view is the value of one identity: its writes, oldest first, applied to
// doc as they come.
type view struct {
	writes  []write    // for reads that touch a clash, which fold them
	doc     any        // the value, as ref.Apply builds it
	present bool       // doc holds a value (the identity may only declare a schema)
	clashes []ref.Path // paths of writes that did not apply to doc

	// The latest description and schema its messages gave.
	description string
	schema      json.RawMessage
}

// write is what a data message does to its identity's value.
type write struct {
	path   ref.Path
	method ref.Method
	data   json.RawMessage // the message's data: the value, wrapped at path
}

// value returns the value w writes, decoded afresh.
func (w write) value() (any, error) { return valueAt(w.data, w.path) }

// NewLog returns a log holding msgs.
func NewLog(msgs ...Message) (*Log, error) {
	l := &Log{}
	if err := l.Append(msgs...); err != nil {
		return nil, err
	}
	return l, nil
}

// Append adds copies of msgs at the end of the log. Messages are checked
// first: if one is malformed, none is appended and the error names its
// position in the log. A write that clashes with the value it lands on is
// appended all the same (the log records what happened); reading that
// place reports the clash. Use [Log.Check] to refuse such writes
// beforehand.
func (l *Log) Append(msgs ...Message) error {
	own := make([]Message, len(msgs))
	ws := make([]write, len(msgs))
	vals := make([]any, len(msgs))
	bad, err := -1, error(nil)
	for i := range msgs {
		own[i] = clone(msgs[i])
		if ws[i], vals[i], err = writeOf(&own[i]); err != nil {
			bad = i
			break
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if bad >= 0 {
		return at(len(l.msgs)+bad, err)
	}
	for i := range own {
		l.msgs = append(l.msgs, &own[i])
		if own[i].Type == TypeData {
			l.index(&own[i], ws[i], vals[i])
		}
	}
	return nil
}

// index records m, a data message that makes write w of value val, in
// the view of its identity. The caller holds l.mu for writing.
func (l *Log) index(m *Message, w write, val any) {
	v := l.views[m.Identity()]
	if v == nil {
		if l.views == nil {
			l.views = map[Identity]*view{}
		}
		v = &view{}
		l.views[m.Identity()] = v
		if m.Instance != "" && !l.instance[m.Instance] {
			if l.instance == nil {
				l.instance = map[string]bool{}
			}
			l.instance[m.Instance] = true
			l.instances = append(l.instances, m.Instance)
		}
	}
	if m.Description != "" {
		v.description = m.Description
	}
	if m.Schema != nil {
		v.schema = m.Schema
	}
	if w.data == nil {
		return
	}
	v.writes = append(v.writes, w)
	v.apply(w, val)
}

// apply writes w, of value val, into doc, or records its clash.
func (v *view) apply(w write, val any) {
	doc, err := ref.Apply(v.doc, v.present, w.path, w.method, val)
	if err != nil {
		v.clashes = append(v.clashes, w.path)
		return
	}
	v.doc, v.present = doc, true
	if w.method == ref.MethodSet {
		// A set replaces what was at its path, clashes included.
		v.clashes = slices.DeleteFunc(v.clashes, func(c ref.Path) bool { return c.HasPrefix(w.path) })
	}
}

// clashesWith reports whether a clash lies on path or under it.
func (v *view) clashesWith(path ref.Path) bool {
	return slices.ContainsFunc(v.clashes, path.Related)
}

// get reads path in v: in doc, or by the reference fold when a clash
// lies on the way.
func (v *view) get(path ref.Path) (json.RawMessage, error) {
	if v.clashesWith(path) {
		return fold(v.writes, path)
	}
	if !v.present {
		return nil, &ref.Error{Offset: -1, At: path.String(), Err: ref.ErrNotFound}
	}
	x, err := ref.Get(v.doc, path)
	if err != nil {
		return nil, err
	}
	return ref.Encode(x)
}

// Check reports whether appending m would succeed and its write would
// combine with the value it lands on.
func (l *Log) Check(m Message) error {
	w, val, err := writeOf(&m)
	if err != nil || w.data == nil {
		return err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	v := l.views[m.Identity()]
	if v == nil || v.clashesWith(w.path) {
		return nil // nothing there yet, or the place is already broken and the write cannot make it worse
	}
	return ref.Check(v.doc, v.present, w.path, w.method, val)
}

// CheckAll reports the first of msgs whose append would fail or whose
// write would not combine with the value it lands on, once the messages
// before it are appended too (see [Log.Check]): its index and the error,
// or -1 and nil. Writes among msgs to one identity are checked against
// each other: a write at a path unrelated to those of the writes before
// it (neither a prefix of the other) lands where they leave the value as
// it was, so it is checked against the log's value; the first that is
// related is checked, with those after it, on a copy of the value.
func (l *Log) CheckAll(msgs ...Message) (int, error) {
	ws := make([]write, len(msgs))
	vals := make([]any, len(msgs))
	count := map[Identity]int{}
	for i := range msgs {
		m := msgs[i]
		var err error
		if ws[i], vals[i], err = writeOf(&m); err != nil {
			return i, err
		}
		if ws[i].data != nil {
			count[m.Identity()]++
		}
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	// The writes among msgs so far to an identity written more than once,
	// and the copy of its value they were applied to once one was related
	// to another.
	type batch struct {
		earlier []int
		copy    *view
	}
	after := map[Identity]*batch{}
	for i := range msgs {
		w, id := ws[i], msgs[i].Identity()
		if w.data == nil {
			continue
		}
		v := l.views[id]
		bt := after[id]
		if bt == nil && count[id] > 1 {
			bt = &batch{}
			after[id] = bt
		}
		if bt != nil {
			if v == nil {
				v = &view{}
			}
			if bt.copy == nil && slices.ContainsFunc(bt.earlier, func(j int) bool { return ws[j].path.Related(w.path) }) {
				c := &view{doc: ref.Clone(v.doc), present: v.present, clashes: slices.Clone(v.clashes)}
				for _, j := range bt.earlier {
					c.apply(ws[j], vals[j])
				}
				bt.copy = c
			}
			if bt.copy != nil {
				v = bt.copy
			}
		}
		if v != nil && !v.clashesWith(w.path) {
			if err := ref.Check(v.doc, v.present, w.path, w.method, vals[i]); err != nil {
				return i, err
			}
		}
		if bt != nil {
			if bt.copy != nil {
				bt.copy.apply(w, vals[i])
			}
			bt.earlier = append(bt.earlier, i)
		}
	}
	return -1, nil
}

// writeOf validates m and returns its write and the value it writes,
// decoded; a message that writes nothing has a write without data.
func writeOf(m *Message) (write, any, error) {
	switch m.Type {
	case "":
		return write{}, nil, fieldErr("type", "missing")
	case TypeText:
		return write{}, nil, m.checkRole()
	case TypeData:
	default:
		return write{}, nil, nil
	}
	if !ref.KindValid(m.Kind) {
		return write{}, nil, fieldErr("kind", "%q is not a valid kind", m.Kind)
	}
	if m.Data == nil {
		if m.OutputPath != "" || m.Method != "" {
			return write{}, nil, fieldErr("data", "missing in an output message")
		}
		return write{}, nil, nil
	}
	if !json.Valid(m.Data) {
		return write{}, nil, fieldErr("data", "is not valid JSON")
	}
	w := write{method: m.Method, data: m.Data}
	if m.OutputPath == "" {
		if w.method == "" {
			w.method = ref.MethodMerge
		}
	} else {
		r, err := singleRef(m.OutputPath)
		if err != nil {
			return write{}, nil, fieldErr("_outputPath", "%v", err)
		}
		if r.Kind != m.Kind {
			return write{}, nil, fieldErr("_outputPath", "writes kind %q but the message has kind %q", r.Kind, m.Kind)
		}
		if w.path = r.Path; w.method == "" {
			w.method = ref.MethodSet
		}
	}
	val, err := w.value()
	if err != nil {
		return write{}, nil, fieldErr("data", "does not hold the value at %s: %v", m.OutputPath, err)
	}
	return w, val, nil
}

// Clone returns a copy of m that shares no memory with it: its JSON
// fields and its advisor are copied too.
func (m Message) Clone() Message { return clone(m) }

// clone returns a deep copy of m.
func clone(m Message) Message {
	for _, r := range []*json.RawMessage{&m.Schema, &m.Data, &m.Tool, &m.Plan, &m.Meta, &m.Failed, &m.Call, &m.Extra} {
		*r = bytes.Clone(*r) // nil stays nil, empty stays empty
	}
	if m.Advisor != nil {
		a := *m.Advisor
		a.Scopes = slices.Clone(a.Scopes)
		m.Advisor = &a
	}
	return m
}

// Len returns the number of messages.
func (l *Log) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.msgs)
}

// at returns the message at position i. The caller holds l.mu.
func (l *Log) at(i int) *Message {
	if i < 0 || i >= len(l.msgs) {
		panic(fmt.Sprintf("message: log index %d out of range [0:%d]", i, len(l.msgs)))
	}
	return l.msgs[i]
}

// At returns a copy of the message at position i.
func (l *Log) At(i int) Message {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return clone(*l.at(i))
}

// LastOf returns the position of the last message of one of types, and
// its type; -1 and "" when there is none.
func (l *Log) LastOf(types ...Type) (int, Type) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := len(l.msgs) - 1; i >= 0; i-- {
		if t := l.msgs[i].Type; slices.Contains(types, t) {
			return i, t
		}
	}
	return -1, ""
}

// IdentityAt returns the type and identity of the message at position i:
// what At(i) gives, without copying the message.
func (l *Log) IdentityAt(i int) (Type, Identity) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	m := l.at(i)
	return m.Type, m.Identity()
}

// Messages returns a copy of the messages.
func (l *Log) Messages() []Message {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]Message, len(l.msgs))
	for i := range l.msgs {
		out[i] = clone(*l.msgs[i])
	}
	return out
}

// All iterates over copies of the messages present when it starts, with
// positions.
func (l *Log) All() iter.Seq2[int, Message] {
	return func(yield func(int, Message) bool) {
		l.mu.RLock()
		msgs := l.msgs // appends never write the messages already there
		l.mu.RUnlock()
		for i := range msgs {
			if !yield(i, clone(*msgs[i])) {
				return
			}
		}
	}
}

// HasInstance reports whether a data message of the log has _instance id.
func (l *Log) HasInstance(id string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.instance[id]
}

// Instances returns the instances of the log's data messages, in order of
// first appearance.
func (l *Log) Instances() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.instances)
}

// Identities returns the data identities in order of first appearance.
func (l *Log) Identities() []Identity {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var ids []Identity
	seen := map[Identity]bool{}
	for i := range l.msgs {
		if m := l.msgs[i]; m.IsData() && !seen[m.Identity()] {
			seen[m.Identity()] = true
			ids = append(ids, m.Identity())
		}
	}
	return ids
}

// Lookup returns the value at path of the global data of kind. It makes
// the Log a [ref.Source] for calls that target no instance.
func (l *Log) Lookup(kind string, path ref.Path) (json.RawMessage, error) {
	return l.lookup(kind, "", path)
}

// Instance returns a [ref.Source] for calls that target instance id: it
// reads the instance's data and falls back to global data, path by path,
// when the instance has no value there. An instance-targeted input thus
// overrides the global one wherever both have a value.
func (l *Log) Instance(id string) ref.Source { return instanceSource{l, id} }

type instanceSource struct {
	l  *Log
	id string
}

func (s instanceSource) Lookup(kind string, path ref.Path) (json.RawMessage, error) {
	return s.l.lookup(kind, s.id, path)
}

// Value returns the whole value of one identity, with no fallback. ok is
// false when the identity holds no data.
func (l *Log) Value(id Identity) (v json.RawMessage, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	vw := l.views[id]
	if vw == nil {
		return nil, false, nil
	}
	v, err = vw.get(nil)
	if errors.Is(err, ref.ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// About returns the latest description and schema the data messages of
// id gave, "" and nil when none did.
func (l *Log) About(id Identity) (description string, schema json.RawMessage) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if v := l.views[id]; v != nil {
		return v.description, bytes.Clone(v.schema)
	}
	return "", nil
}

func (l *Log) lookup(kind, instance string, path ref.Path) (json.RawMessage, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	read := func(id Identity) func(ref.Path) (json.RawMessage, error, bool) {
		return func(p ref.Path) (json.RawMessage, error, bool) {
			v := l.views[id]
			if v == nil {
				return nil, nil, false
			}
			val, err := v.get(p)
			return val, err, true
		}
	}
	return instanceLookup(kind, instance, path, read(Identity{kind, instance}), read(Identity{kind, ""}))
}

// instanceLookup reads path for a call of instance (013) from the
// instance's value and the global one, each read as (value, error,
// whether the identity is known): the instance's overrides the global
// field by field. Where both hold an object, the result is the global
// object with the instance's members laid over it, recursively; anything
// else of the instance's (an array, a scalar) replaces the global value,
// and what lies under it; where the instance has nothing, the global
// value shows. So †state.cfg and †state.cfg.keep agree. The naive scan
// (the tests' oracle) reads the same way.
func instanceLookup(kind, instance string, path ref.Path, inst, global func(ref.Path) (json.RawMessage, error, bool)) (json.RawMessage, error) {
	notFound := func() error {
		return &ref.Error{Offset: -1, At: path.String(), Err: ref.ErrNotFound}
	}
	var iv json.RawMessage
	var ierr error
	iknown := false
	if instance != "" {
		iv, ierr, iknown = inst(path)
	}
	if iknown && ierr != nil {
		if !errors.Is(ierr, ref.ErrNotFound) {
			return nil, ierr // the instance's value is broken there
		}
		// A value of the instance above path that is not an object
		// replaces the global one and all under it.
		for n := len(path) - 1; n >= 0; n-- {
			if pv, err, _ := inst(path[:n]); err == nil {
				if len(pv) > 0 && pv[0] != '{' {
					return nil, notFound()
				}
				break
			}
		}
	}
	gv, gerr, gknown := global(path)
	switch {
	case iknown && ierr == nil:
		if gknown && gerr == nil {
			return overlay(gv, iv), nil
		}
		return iv, nil
	case gknown:
		return gv, gerr
	case iknown:
		return nil, ierr
	}
	if instance != "" {
		// Other instances may have the kind: say where it was looked for.
		return nil, &ref.Error{Offset: -1, Err: fmt.Errorf("%w %q in instance %q or the global context", ref.ErrUnknownKind, kind, instance)}
	}
	return nil, &ref.Error{Offset: -1, Err: fmt.Errorf("%w %q", ref.ErrUnknownKind, kind)}
}

// overlay lays over onto base: objects merge member by member,
// recursively; anything else of over's replaces base.
func overlay(base, over json.RawMessage) json.RawMessage {
	if len(base) == 0 || len(over) == 0 || base[0] != '{' || over[0] != '{' {
		return over
	}
	var b, o any
	if json.Unmarshal(base, &b) != nil || json.Unmarshal(over, &o) != nil {
		return over
	}
	// Laying one object over another is a merge at the root (008).
	merged, err := ref.Apply(b, true, nil, ref.MethodMerge, o)
	if err != nil {
		return over
	}
	out, err := ref.Encode(merged)
	if err != nil {
		return over
	}
	return out
}

// fold resolves path over writes given oldest first, by the definition of
// resolution: collect the writes related to path, newest first, until a
// set at a prefix of path, skipping writes that a newer set at a prefix of
// their own path replaced, then apply them oldest first.
func fold(ws []write, path ref.Path) (json.RawMessage, error) {
	var keep []write
	var sets []ref.Path
scan:
	for i := len(ws) - 1; i >= 0; i-- {
		w := ws[i]
		if !w.path.Related(path) {
			continue
		}
		for _, s := range sets {
			if w.path.HasPrefix(s) {
				continue scan
			}
		}
		keep = append(keep, w)
		if w.method == ref.MethodSet {
			if path.HasPrefix(w.path) {
				break
			}
			sets = append(sets, w.path)
		}
	}
	var doc any
	present := false
	for i := len(keep) - 1; i >= 0; i-- {
		w := keep[i]
		val, err := w.value()
		if err != nil {
			return nil, err
		}
		doc, err = ref.Apply(doc, present, w.path, w.method, val)
		if err != nil {
			return nil, err
		}
		present = true
	}
	if !present {
		return nil, &ref.Error{Offset: -1, At: path.String(), Err: ref.ErrNotFound}
	}
	x, err := ref.Get(doc, path)
	if err != nil {
		return nil, err
	}
	return ref.Encode(x)
}

// Write returns what data message m does to its identity's value: the
// path it writes (empty for the root), the method, and the value written
// there. ok is false when m writes nothing: it is not data, or it only
// declares a schema or a description.
func (m *Message) Write() (path ref.Path, method ref.Method, value json.RawMessage, ok bool, err error) {
	if m.Type != TypeData {
		return nil, "", nil, false, nil
	}
	w, val, err := writeOf(m)
	if err != nil || w.data == nil {
		return nil, "", nil, false, err
	}
	if value, err = ref.Encode(val); err != nil {
		return nil, "", nil, false, err
	}
	return w.path, w.method, value, true, nil
}
