package message

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/ref"
)

// Log is an append-only list of messages with an index of the data they
// write. Each data identity (kind and instance) keeps its value
// materialised, so a lookup walks the path in that value instead of
// scanning the history; writes that do not combine (a push onto a string,
// say) are remembered, and lookups that touch them fall back to the
// reference scan so they report the same error it would.
//
// A Log is safe for concurrent use. The zero Log is empty and ready.
type Log struct {
	mu   sync.RWMutex
	msgs entries
	// The views of the identities written. The first lives in the log
	// itself: a run's log mostly holds one, its state, and then needs no
	// map.
	first      view
	firstID    Identity
	hasOne     bool
	firstSpare viewSpare          // the first view's lists, while short
	views      map[Identity]*view // the others
	arena      []byte             // room for the next outputs' bytes (see carve)
	restBuf    [4][]entry         // room for msgs.rest's first chunks (see newLog)
}

// view is the value of one identity. A view of few writes keeps them
// raw (small) and resolves a path by [fold], as the reference does, so
// most identities of a large log hold no decoded value; past
// smallView writes it is materialised into doc. A view whose writes all
// set one top-level key each, as a run's results do, keeps the last
// value at each key raw instead (keyed), up to keyedMax keys.
type view struct {
	keyed   []keyed // while every write is a set at one top-level key: the last at each key
	small   []write // the writes here, oldest first, while not materialised nor keyed
	full    bool    // materialised into doc
	doc     any
	present bool
	writes  []int      // log positions of the messages that write here, oldest first
	clashes []ref.Path // paths of writes that did not apply

	// The latest description and schema its messages gave: a render
	// shows them with the value, and would otherwise look for them
	// message by message.
	description string
	schema      json.RawMessage

	spare *viewSpare // room for the first entries of its lists, if any
}

// viewSpare is room for a view's first writes and keys, in the log
// itself for its first view: the lists then start without allocating,
// and a run's state, written a few times per call, grows them once
// less.
type viewSpare struct {
	writes [spareView]int
	keyed  [spareView]keyed
}

// spareView is how many writes and keys a viewSpare has room for.
const spareView = 16

// smallView is how many writes a view keeps raw before it materialises.
const smallView = 4

// roomForOne returns s with room for one more element. A view's lists
// start at smallView and, once past it, grow four times over at first
// rather than twice: an identity written more than a few times, as a
// run's state is, is written many times.
func roomForOne[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	if len(s) <= smallView {
		return slices.Grow(s, max(3*len(s), 1))
	}
	return slices.Grow(s, 1)
}

// write is what a data message does to its identity's value.
type write struct {
	path   ref.Path
	method ref.Method
	value  json.RawMessage
}

// newLog returns an empty log whose list of chunks starts in the log: a
// copy of the list (see entries) only reads the chunks it had.
func newLog() *Log {
	l := &Log{}
	l.msgs.rest = l.restBuf[:0]
	return l
}

// NewLog returns a log holding msgs.
func NewLog(msgs ...Message) (*Log, error) {
	l := newLog()
	if err := l.Append(msgs...); err != nil {
		return nil, err
	}
	return l, nil
}

// Append adds msgs at the end of the log. Messages are checked first: if
// one is malformed, none is appended and the error names its position in
// the log. A write that clashes with the value it lands on is appended all
// the same (the log records what happened); reading that place reports the
// clash. Use [Log.Check] to refuse such writes beforehand.
func (l *Log) Append(msgs ...Message) error {
	var one [1]write // the loop appends one message at a time
	var ws []write   // the writes of msgs, when one is data
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range msgs {
		w, err := writeOf(&msgs[i])
		if err != nil {
			return at(l.msgs.n+i, err)
		}
		if w.value == nil {
			continue
		}
		if ws == nil {
			ws = one[:]
			if len(msgs) != 1 {
				ws = make([]write, len(msgs))
			}
		}
		ws[i] = w
	}
	l.msgs.reserve(len(msgs))
	var rests []Message // the messages that are not inline, in one block
	if n := countRests(msgs); n > 0 {
		rests = make([]Message, n)
	}
	for i := range msgs {
		m := &msgs[i]
		pos := l.msgs.n
		var rest *Message
		if len(rests) > 0 {
			rest = &rests[0]
		}
		e := l.msgs.push()
		if e.pack(m, rest); e.rest != nil {
			rests = rests[1:]
		}
		if m.Type != TypeData {
			continue
		}
		var w write
		if ws != nil {
			w = ws[i]
		}
		if err := l.index(pos, m, w); err != nil {
			return at(pos, err)
		}
	}
	return nil
}

// AppendOutput appends the messages o.Messages(call, instance, result,
// b, date) returns, as Append would, without making them: a loop appends
// the output of every call it runs. wrote, when not nil, is told the
// kind of each message appended, once the log is unlocked. The log keeps
// nothing of o: an OutputStore it was parsed into may take another once
// AppendOutput returns.
func (l *Log) AppendOutput(o *Output, call json.RawMessage, instance string, result json.RawMessage, b Branch, date time.Time, wrote func(kind string)) error {
	if len(o.targets) == 0 {
		return nil
	}
	if !jsonfast.Valid(result) {
		return fmt.Errorf("message: result of call is not valid JSON")
	}
	targets, err := o.branch(b)
	if err != nil || len(targets) == 0 {
		return err
	}
	for i := range targets {
		if k := targets[i].ref.Kind; !ref.KindValid(k) {
			return at(l.Len(), fieldErr("kind", "%q is not a valid kind", k))
		}
	}
	callc, resc := compactIfNeeded(call), compactIfNeeded(result)
	method := o.Method
	if method == "" {
		method = ref.MethodSet
	}
	code, ok := methodCode(o.Method)
	if !ok {
		return fmt.Errorf("message: %w %q", ref.ErrMethod, o.Method)
	}
	appended, err := l.appendTargets(targets, callc, instance, resc, date, method, code)
	if wrote != nil {
		for i := range targets[:appended] {
			wrote(targets[i].ref.Kind)
		}
	}
	return err
}

// appendTargets is the locked part of AppendOutput: it appends the
// message of each target and returns how many it appended.
func (l *Log) appendTargets(targets []target, call json.RawMessage, instance string, result json.RawMessage, date time.Time, method ref.Method, code uint8) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	buf, stamp := appendOutputStamp(l.carve(outputSize(targets, result)), date)
	for i := range targets {
		t := &targets[i]
		var data, written []byte
		buf, data, written = appendTarget(buf, t, result)
		pos := l.msgs.n
		off, n, _ := writtenAt(data, written) // within data: appendTarget made it so
		e := l.msgs.push()                    // zero: filled field by field, as entry.pack does
		e.typ, e.kind, e.instance, e.data, e.call, e.date = eData, t.ref.Kind, instance, rawOf(data), rawOf(call), stamp
		e.method, e.outputPath, e.wOff, e.wLen = code, t.text, off, n
		v := l.viewOf(Identity{Kind: t.ref.Kind, Instance: instance})
		if err := v.add(pos, write{path: t.ref.Path, method: method, value: written}); err != nil {
			return i, at(pos, err)
		}
	}
	return len(targets), nil
}

// carve returns an empty buffer with room for n bytes, cut from memory
// the log keeps for the outputs it appends: a run's outputs are many and
// small, and live as long as the log. The caller holds l.mu for writing.
func (l *Log) carve(n int) []byte {
	const least, most = 512, 16 << 10
	if n > most/4 {
		return make([]byte, 0, n)
	}
	if cap(l.arena)-len(l.arena) < n {
		l.arena = make([]byte, 0, min(max(least, 2*cap(l.arena)), most))
	}
	end := len(l.arena) + n
	b := l.arena[len(l.arena):len(l.arena):end]
	l.arena = l.arena[:end]
	return b
}

// viewOf returns the view of id, made when there is none. The caller
// holds l.mu for writing.
func (l *Log) viewOf(id Identity) *view {
	if v := l.view(id); v != nil {
		return v
	}
	if !l.hasOne {
		l.hasOne, l.firstID = true, id
		l.first.spare = &l.firstSpare
		return &l.first
	}
	if l.views == nil {
		l.views = map[Identity]*view{}
	}
	v := &view{}
	l.views[id] = v
	return v
}

// view returns the view of id, nil when there is none. The caller holds
// l.mu.
func (l *Log) view(id Identity) *view {
	if l.hasOne && l.firstID == id {
		return &l.first
	}
	return l.views[id]
}

// add records w, the write of the message at pos.
func (v *view) add(pos int, w write) error {
	if v.writes == nil {
		if v.spare != nil {
			v.writes = v.spare.writes[:0]
		} else {
			v.writes = make([]int, 0, smallView)
		}
	}
	v.writes = append(roomForOne(v.writes), pos)
	if !v.full {
		if v.small == nil && v.keyedWrite(w) {
			v.setKey(w)
			return nil
		}
		if v.keyed != nil {
			v.small, v.keyed = v.keyWrites(smallView), nil
		}
		if len(v.small) < smallView {
			if v.small == nil {
				v.small = make([]write, 0, smallView)
			}
			w.path = slices.Clone(w.path) // it may be an Output's, which is not the log's
			v.small = append(v.small, w)
			return nil
		}
		small := v.small
		v.small, v.full = nil, true
		for _, w := range small {
			if err := v.apply(w); err != nil { // cannot happen: checked by writeOf
				return err
			}
		}
	}
	return v.apply(w)
}

// index records m, the data message at pos that makes write w, in the
// view of its identity. The caller holds l.mu for writing.
func (l *Log) index(pos int, m *Message, w write) error {
	v := l.viewOf(m.Identity())
	if m.Description != "" {
		v.description = m.Description
	}
	if m.Schema != nil {
		v.schema = m.Schema
	}
	if w.value == nil {
		return nil
	}
	return v.add(pos, w)
}

// countRests returns how many of msgs an entry keeps behind a pointer.
func countRests(msgs []Message) int {
	n := 0
	for i := range msgs {
		if !inline(&msgs[i]) {
			n++
		}
	}
	return n
}

// apply writes w into the materialised value, or records its clash.
func (v *view) apply(w write) error {
	val, err := ref.Decode(w.value)
	if err != nil {
		return err
	}
	doc, err := ref.Apply(v.doc, v.present, w.path, w.method, val)
	if err != nil {
		v.clashes = append(v.clashes, slices.Clone(w.path))
		return nil
	}
	v.doc, v.present = doc, true
	if w.method == ref.MethodSet && len(v.clashes) > 0 {
		v.heal(w.path)
	}
	return nil
}

// Check reports whether appending m would succeed and its write would
// combine with the value it lands on.
func (l *Log) Check(m Message) error {
	w, err := writeOf(&m)
	if err != nil || m.Type != TypeData || w.value == nil {
		return err
	}
	val, err := ref.Decode(w.value)
	if err != nil {
		return err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	v := l.view(m.Identity())
	if v == nil {
		return nil
	}
	if !v.full && v.writes != nil {
		m := &view{}
		for _, w := range v.rawWrites() {
			if err := m.apply(w); err != nil {
				return err
			}
		}
		v = m
	}
	if len(v.clashes) > 0 && v.clashesWith(w.path) {
		return nil // the place is already broken; the new write cannot make it worse
	}
	return ref.Check(v.doc, v.present, w.path, w.method, val)
}

// writeOf validates m and returns its write (value nil if it writes nothing).
func writeOf(m *Message) (write, error) {
	switch m.Type {
	case "":
		return write{}, fieldErr("type", "missing")
	case TypeText:
		return write{}, m.checkRole()
	case TypeData:
	default:
		return write{}, nil
	}
	if !ref.KindValid(m.Kind) {
		return write{}, fieldErr("kind", "%q is not a valid kind", m.Kind)
	}
	if m.Data == nil {
		if m.OutputPath != "" || m.Method != "" {
			return write{}, fieldErr("data", "missing in an output message")
		}
		return write{}, nil
	}
	if m.written == nil && !json.Valid(m.Data) {
		return write{}, fieldErr("data", "is not valid JSON")
	}
	if m.OutputPath == "" {
		method := m.Method
		if method == "" {
			method = ref.MethodMerge
		}
		return write{method: method, value: m.Data}, nil
	}
	var r ref.Ref
	var err error
	if t := m.target; t != nil && t.text == m.OutputPath {
		r = *t.ref // parsed by Outputs
	} else if r, err = plainRef(m.OutputPath); err != nil {
		if r, err = singleRef(m.OutputPath); err != nil {
			return write{}, fieldErr("_outputPath", "%v", err)
		}
	}
	if r.Kind != m.Kind {
		return write{}, fieldErr("_outputPath", "writes kind %q but the message has kind %q", r.Kind, m.Kind)
	}
	val := m.written
	if val == nil {
		if val, err = unwrap(m.Data, r.Path); err != nil {
			return write{}, fieldErr("data", "does not hold the value at %s: %v", m.OutputPath, err)
		}
	}
	method := m.Method
	if method == "" {
		method = ref.MethodSet
	}
	return write{path: r.Path, method: method, value: val}, nil
}

// heal forgets the clashes that a set at p replaced.
func (v *view) heal(p ref.Path) {
	v.clashes = slices.DeleteFunc(v.clashes, func(c ref.Path) bool { return c.HasPrefix(p) })
}

func (v *view) clashesWith(p ref.Path) bool {
	for _, c := range v.clashes {
		if c.Related(p) {
			return true
		}
	}
	return false
}

// Len returns the number of messages.
func (l *Log) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.msgs.n
}

// At returns the message at position i.
func (l *Log) At(i int) (m Message) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.msgs.at(i).fill(&m)
	return m
}

// TypeAt returns the type of the message at position i: what At(i).Type
// is, without copying the message.
func (l *Log) TypeAt(i int) Type {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.msgs.at(i).typeOf()
}

// LastOf returns the position of the last message of one of types, and
// its type; -1 and "" when there is none. It reads the log under one lock,
// where TypeAt takes one per message.
func (l *Log) LastOf(types ...Type) (int, Type) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := l.msgs.n - 1; i >= 0; i-- {
		if t := l.msgs.at(i).typeOf(); slices.Contains(types, t) {
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
	e := l.msgs.at(i)
	return e.typeOf(), e.identity()
}

// TypedIdentity is the type and identity of a message, as IdentityAt gives
// them.
type TypedIdentity struct {
	Type     Type
	Identity Identity
}

// IdentitiesFrom appends to dst the type and identity of each message
// from position from on, under one lock: a reader of the messages a step
// appended asks about each of them.
func (l *Log) IdentitiesFrom(dst []TypedIdentity, from int) []TypedIdentity {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := max(from, 0); i < l.msgs.n; i++ {
		e := l.msgs.at(i)
		dst = append(dst, TypedIdentity{e.typeOf(), e.identity()})
	}
	return dst
}

// Messages returns a copy of the messages.
func (l *Log) Messages() []Message {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]Message, l.msgs.n)
	for i := range out {
		out[i] = l.msgs.at(i).message()
	}
	return out
}

// All iterates over the messages present when it starts, with positions.
func (l *Log) All() iter.Seq2[int, Message] {
	return func(yield func(int, Message) bool) {
		l.mu.RLock()
		msgs := l.msgs
		l.mu.RUnlock()
		for i := range msgs.n {
			if !yield(i, msgs.at(i).message()) {
				return
			}
		}
	}
}

// Identities returns the data identities in order of first appearance.
func (l *Log) Identities() []Identity {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var ids []Identity
	seen := map[Identity]bool{}
	for i := range l.msgs.n {
		e := l.msgs.at(i)
		if id := e.identity(); e.isData() && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
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

// Resolves reports whether Lookup finds path of kind where a call of
// instance reads it (see [Log.Instance]; "" for global data), counting a
// value that is there but cannot be read as found. A call waiting for a
// reference asks after each write: a key not written yet is answered
// without making the error Lookup would return.
func (l *Log) Resolves(instance, kind string, path ref.Path) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if instance != "" {
		if v := l.view(Identity{kind, instance}); v != nil && l.has(v, path) {
			return true
		}
	}
	v := l.view(Identity{kind, ""})
	return v != nil && l.has(v, path)
}

// has reports whether get finds path in v. The caller holds l.mu.
func (l *Log) has(v *view, path ref.Path) bool {
	if v.keyed != nil && len(path) > 0 {
		if _, found := v.findKey(path[0]); !found {
			return false
		}
	}
	_, err := l.get(v, path)
	return err == nil || !errors.Is(err, ref.ErrNotFound)
}

// Value returns the whole value of one identity, with no fallback. ok is
// false when the identity holds no data.
func (l *Log) Value(id Identity) (v json.RawMessage, ok bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	vw := l.view(id)
	if vw == nil {
		return nil, false, nil
	}
	v, err = l.get(vw, nil)
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
	if v := l.view(id); v != nil {
		return v.description, v.schema
	}
	return "", nil
}

func (l *Log) lookup(kind, instance string, path ref.Path) (json.RawMessage, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var ierr error
	if instance != "" {
		if v := l.view(Identity{kind, instance}); v != nil {
			val, err := l.get(v, path)
			if err == nil || !errors.Is(err, ref.ErrNotFound) {
				return val, err
			}
			ierr = err
		}
	}
	v := l.view(Identity{kind, ""})
	if v == nil {
		if ierr != nil {
			return nil, ierr
		}
		return nil, &ref.Error{Offset: -1, Err: unknownKind(kind)}
	}
	return l.get(v, path)
}

// unknownKind is fmt.Errorf("%w %q", ref.ErrUnknownKind, kind) but for
// its text, made only when read: a call waiting for a kind no message
// carries yet asks again and again.
type unknownKind string

func (k unknownKind) Error() string {
	return ref.ErrUnknownKind.Error() + " " + strconv.Quote(string(k))
}
func (k unknownKind) Unwrap() error { return ref.ErrUnknownKind }

// get reads path in one view. The caller holds l.mu.
func (l *Log) get(v *view, path ref.Path) (json.RawMessage, error) {
	if v.keyed != nil {
		return v.getKeyed(path)
	}
	if v.small != nil {
		return fold(v.small, path)
	}
	if len(v.clashes) > 0 && v.clashesWith(path) {
		return l.scan(v, path)
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

// scan computes a value by the reference algorithm: newest to oldest,
// stop at a covering set, fold what was collected.
func (l *Log) scan(v *view, path ref.Path) (json.RawMessage, error) {
	ws := make([]write, 0, len(v.writes))
	for i := range v.writes {
		m := l.msgs.at(v.writes[i]).message()
		w, _ := writeOf(&m)
		ws = append(ws, w)
	}
	return fold(ws, path)
}

// fold resolves path over writes given oldest first, by the definition of
// resolution: collect the writes related to path, newest first, until a
// set at a prefix of path, skipping writes that a newer set at a prefix of
// their own path replaced, then apply them oldest first.
func fold(ws []write, path ref.Path) (json.RawMessage, error) {
	var buf [smallView]write
	keep := buf[:0]
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
		val, err := ref.Decode(w.value)
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
