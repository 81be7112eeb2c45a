package message

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/ref"
)

// Branch chooses the alternative of a branching output path
// (†state.receipt || †state.error) that a result is written to.
type Branch int

const (
	// Success writes to the first alternative.
	Success Branch = 0
	// Failure writes to the last alternative when the path declares more
	// than one; with a single alternative nothing is written.
	Failure Branch = -1
)

// Outputs returns the output messages (008) that record result for call:
// one data message per target of the chosen branch of the call's
// _outputPath, each holding result wrapped at its path, with the call, the
// date, the call's _outputMethod (set by default) and the target in hidden
// metadata. The call's _instance, if any, scopes every message. A call
// without _outputPath writes nothing. A Branch ≥ 0 picks that alternative
// explicitly, as an Activity does when it chooses the outcome.
func Outputs(call, result json.RawMessage, b Branch, date time.Time) ([]Message, error) {
	meta, err := ParseCallMeta(call)
	if err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	if meta.OutputPath == "" {
		return nil, nil
	}
	if !jsonfast.Valid(result) {
		return nil, fmt.Errorf("message: result of call is not valid JSON")
	}
	o, err := ParseOutput(meta)
	if err != nil {
		return nil, err
	}
	return o.messages(call, meta.Instance, result, b, date)
}

// Output is where and how a call writes its results: its _outputPath
// and _outputMethod parsed. A call that runs many times, or the calls of
// one plan's instances, share one Output and record each result with
// [Output.Messages] without parsing them again. An Output is immutable
// and safe for concurrent use.
type Output struct {
	Path   ref.Expr // the parsed _outputPath; no alternatives without one
	Method ref.Method

	targets [][]target // per alternative of Path, each target with its text
}

// target is one reference of an output path with its canonical text.
type target struct {
	ref  *ref.Ref // in the Output's Path
	text string
}

// ParseOutput parses the output path and method of a call whose
// meta-properties are meta.
func ParseOutput(meta CallMeta) (*Output, error) { return ParseOutputIn(meta, nil) }

// ParseOutputIn is [ParseOutput] that keeps the usual output, one plain
// reference, in *store when store is not nil. The Output is valid while
// *store is, and store must not be used for another meanwhile; a log it
// was appended to keeps nothing of it.
func ParseOutputIn(meta CallMeta, store *OutputStore) (*Output, error) {
	if meta.OutputPath == "" {
		if store != nil {
			store.plain.o = Output{}
			return &store.plain.o, nil
		}
		return &Output{}, nil
	}
	var one *plainOutput
	if store != nil {
		one = &store.plain
	}
	if o := parsePlainOutput(meta.OutputPath, one); o != nil {
		method, err := ref.ParseMethod(meta.OutputMethod)
		if err != nil {
			return nil, fmt.Errorf("message: call _outputMethod: %w", err)
		}
		o.Method = method
		return o, nil
	}
	e, err := ref.Parse(meta.OutputPath)
	if err != nil {
		return nil, fmt.Errorf("message: call _outputPath: %w", err)
	}
	method, err := ref.ParseMethod(meta.OutputMethod)
	if err != nil {
		return nil, fmt.Errorf("message: call _outputMethod: %w", err)
	}
	if len(e.Alts) == 1 && len(e.Alts[0]) == 1 {
		// The common case, one target: one allocation, and the path is
		// its own canonical text when written without spaces.
		one := &struct {
			o       Output
			targets [1][]target
			target  [1]target
		}{}
		r := &e.Alts[0][0]
		text := meta.OutputPath
		if r.Offset != 0 || len(text) != len(ref.Dagger)+len(r.Kind)+pathLen(r.Path) {
			text = r.String()
		}
		one.target[0] = target{ref: r, text: text}
		one.targets[0] = one.target[:]
		one.o = Output{Path: e, Method: method, targets: one.targets[:]}
		return &one.o, nil
	}
	o := &Output{Path: e, Method: method}
	o.targets = make([][]target, len(e.Alts))
	for i, alt := range e.Alts {
		o.targets[i] = make([]target, len(alt))
		for j := range alt {
			o.targets[i][j] = target{ref: &alt[j], text: alt[j].String()}
		}
	}
	return o, nil
}

// plainOutput is an Output of one plain reference with all it points to.
type plainOutput struct {
	o       Output
	targets [1][]target
	target  [1]target
	alts    [1]ref.Group
	refs    [1]ref.Ref
	segs    [plainSegs]string
}

// OutputStore holds a parsed output in place: a caller that keeps each
// call in a struct of its own embeds one to parse the call's output
// without an allocation of its own (see [ParseOutputIn]). ParseOutputIn
// writes all of it that the Output it returns reads: a store can be
// parsed into again without being cleared.
type OutputStore struct{ plain plainOutput }

// plainSegs is how many path segments parsePlainOutput keeps inline:
// enough for †state.result.field, and an OutputStore fits the call that
// holds it in a smaller size class.
const plainSegs = 3

// parsePlainOutput parses the usual output path, one reference †kind.a.b
// of at most plainSegs segments of printable ASCII with nothing around
// it, into an Output in one allocation, as ref.Parse and ParseOutput
// would; it returns nil for any other path, which they then handle.
func parsePlainOutput(s string, one *plainOutput) *Output {
	if !strings.HasPrefix(s, ref.Dagger) {
		return nil
	}
	i := len(ref.Dagger)
	k := i
	for k < len(s) && kindByte(s[k]) {
		k++
	}
	if k == i {
		return nil
	}
	if one == nil {
		one = &plainOutput{}
	}
	n := 0
	for j := k; j < len(s); {
		if s[j] != '.' || n == plainSegs {
			return nil
		}
		start := j + 1
		for j = start; j < len(s) && plainSegByte(s[j]); j++ {
		}
		if j == start {
			return nil
		}
		one.segs[n] = s[start:j]
		n++
	}
	r := ref.Ref{Kind: s[i:k]}
	if n > 0 {
		r.Path = one.segs[:n:n]
	}
	one.refs[0] = r
	one.target[0] = target{ref: &one.refs[0], text: s}
	one.alts[0] = one.refs[:]
	one.targets[0] = one.target[:]
	one.o = Output{Path: ref.Expr{Text: s, Alts: one.alts[:]}, targets: one.targets[:]}
	return &one.o
}

// plainRef parses an output path that parsePlainOutput reads, of any
// number of segments, as singleRef does but in one allocation: the log
// parses again the paths of the outputs it re-reads, since it keeps none
// of their parsed forms. Other paths are an error, for singleRef to read.
func plainRef(s string) (ref.Ref, error) {
	if !strings.HasPrefix(s, ref.Dagger) {
		return ref.Ref{}, errNotPlain
	}
	i := len(ref.Dagger)
	k := i
	for k < len(s) && kindByte(s[k]) {
		k++
	}
	if k == i {
		return ref.Ref{}, errNotPlain
	}
	n := strings.Count(s[k:], ".")
	if n == 0 {
		if k != len(s) {
			return ref.Ref{}, errNotPlain
		}
		return ref.Ref{Kind: s[i:k]}, nil
	}
	path := make(ref.Path, 0, n)
	for j := k; j < len(s); {
		if s[j] != '.' {
			return ref.Ref{}, errNotPlain
		}
		start := j + 1
		for j = start; j < len(s) && plainSegByte(s[j]); j++ {
		}
		if j == start {
			return ref.Ref{}, errNotPlain
		}
		path = append(path, s[start:j])
	}
	return ref.Ref{Kind: s[i:k], Path: path}, nil
}

// errNotPlain is plainRef's answer for a path it does not read.
var errNotPlain = errors.New("not a plain output path")

func kindByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// plainSegByte reports whether c is printable ASCII that a path segment
// may hold.
func plainSegByte(c byte) bool {
	return c > ' ' && c < 0x7f && c != '.' && c != '|' && c != '&' && c != '"' && c != '\\'
}

// pathLen is the length of "."+p.String(), or 0 for no path.
func pathLen(p ref.Path) int {
	n := 0
	for _, seg := range p {
		n += 1 + len(seg)
	}
	return n
}

// Messages is [Outputs] for a call whose output is o: call is the call
// as it is recorded in each message, and instance its _instance.
func (o *Output) Messages(call json.RawMessage, instance string, result json.RawMessage, b Branch, date time.Time) ([]Message, error) {
	if len(o.targets) == 0 {
		return nil, nil
	}
	if !jsonfast.Valid(result) {
		return nil, fmt.Errorf("message: result of call is not valid JSON")
	}
	return o.messages(call, instance, result, b, date)
}

func (o *Output) messages(call json.RawMessage, instance string, result json.RawMessage, b Branch, date time.Time) ([]Message, error) {
	targets, err := o.branch(b)
	if err != nil || len(targets) == 0 {
		return nil, err
	}
	callc, resc := compactIfNeeded(call), compactIfNeeded(result)
	// The date and the data of every target go into one buffer, which
	// for one small target shares the allocation of the message.
	size := outputSize(targets, resc)
	var out []Message
	var buf []byte
	if len(targets) == 1 && size <= smallOutput {
		one := &struct {
			m   [1]Message
			buf [smallOutput]byte
		}{}
		out, buf = one.m[:], one.buf[:0]
	} else {
		out, buf = make([]Message, len(targets)), make([]byte, 0, size)
	}
	buf, stamp := appendOutputStamp(buf, date)
	for i := range targets {
		t := &targets[i]
		var data, written []byte
		buf, data, written = appendTarget(buf, t, resc)
		out[i] = Message{
			Type:       TypeData,
			Kind:       t.ref.Kind,
			Instance:   instance,
			Data:       data,
			Call:       callc,
			Date:       stamp,
			Method:     o.Method,
			OutputPath: t.text,
			written:    written,
			target:     t,
		}
	}
	return out, nil
}

// branch returns the targets of branch b: none when b is Failure and the
// path does not branch.
func (o *Output) branch(b Branch) ([]target, error) {
	switch {
	case b == Failure && len(o.targets) < 2:
		return nil, nil
	case b == Failure:
		return o.targets[len(o.targets)-1], nil
	case int(b) < len(o.targets) && b >= 0:
		return o.targets[b], nil
	}
	return nil, fmt.Errorf("message: branch %d of %q, which has %d", b, o.Path.Text, len(o.targets))
}

// outputSize is the room the date and the data of targets take.
func outputSize(targets []target, result json.RawMessage) int {
	size := maxStamp
	for i := range targets {
		size += wrapLen(targets[i].ref.Path, result)
	}
	return size
}

// appendOutputStamp appends the date of an output and returns it as a
// string sharing buf.
func appendOutputStamp(buf []byte, date time.Time) ([]byte, string) {
	start := len(buf)
	buf = appendStamp(buf, date)
	// Safe: these bytes are never written again. Appends write past
	// them, and the data slices appendTarget returns end before the next
	// one starts.
	return buf, unsafe.String(&buf[start], len(buf)-start)
}

// appendTarget appends the data that writes result at t, and returns it
// and the result within it.
func appendTarget(buf []byte, t *target, result json.RawMessage) (_, data, written []byte) {
	start := len(buf)
	buf = appendWrap(buf, t.ref.Path, result)
	data = buf[start:len(buf):len(buf)]
	off := len(data) - len(t.ref.Path) - len(result) // where the value starts: before one '}' per segment
	return buf, data, data[off : off+len(result) : off+len(result)]
}

// appendStamp appends t in UTC as time.RFC3339Nano formats it, without
// interpreting the layout for the usual years. The date and time to the
// second are kept for the next stamp: the outputs of a step mostly fall
// in the same second, and splitting a time into fields costs more than
// the rest of the stamp.
func appendStamp(b []byte, t time.Time) []byte {
	unix := t.Unix()
	if s := lastStamp.Load(); s != nil && s.unix == unix {
		b = append(b, s.text[:]...)
	} else {
		u := t.UTC()
		year, month, day := u.Date()
		if year < 0 || year > 9999 {
			return u.AppendFormat(b, time.RFC3339Nano)
		}
		hour, minute, sec := u.Clock()
		s := &stamp{unix: unix, text: [19]byte{byte('0' + year/1000), byte('0' + year/100%10), byte('0' + year/10%10), byte('0' + year%10), '-',
			byte('0' + month/10), byte('0' + month%10), '-', byte('0' + day/10), byte('0' + day%10), 'T',
			byte('0' + hour/10), byte('0' + hour%10), ':', byte('0' + minute/10), byte('0' + minute%10), ':',
			byte('0' + sec/10), byte('0' + sec%10)}}
		lastStamp.Store(s)
		b = append(b, s.text[:]...)
	}
	if ns := t.Nanosecond(); ns != 0 {
		var frac [9]byte
		for i := len(frac) - 1; i >= 0; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := len(frac)
		for frac[n-1] == '0' { // RFC3339Nano drops trailing zeros
			n--
		}
		b = append(b, '.')
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z')
}

// stamp is a second and its date and time in RFC 3339, UTC.
type stamp struct {
	unix int64
	text [19]byte
}

// lastStamp is the second appendStamp wrote last.
var lastStamp atomic.Pointer[stamp]

// maxStamp is the length of a UTC date in RFC 3339 with nanoseconds, for
// years of four digits.
const maxStamp = len("2006-01-02T15:04:05.999999999Z")

// smallOutput is the buffer that shares an allocation with the message
// of a single-target output: with a Message, it fills a 480-byte size
// class.
const smallOutput = 88

// compactIfNeeded compacts valid JSON that has white space outside strings
// could hold, and returns compact input as it is.
func compactIfNeeded(v json.RawMessage) json.RawMessage {
	if jsonfast.HasSpace(v) {
		return compact(v)
	}
	return v
}

// wrapRaw nests v under the keys of path: {"a":{"b":v}}.
func wrapRaw(path ref.Path, v json.RawMessage) json.RawMessage {
	if len(path) == 0 {
		return v
	}
	return appendWrap(make([]byte, 0, wrapLen(path, v)), path, v)
}

// wrapLen is the length of v wrapped at path, exact for plain segments.
func wrapLen(path ref.Path, v json.RawMessage) int {
	n := len(v)
	for _, seg := range path {
		n += len(seg) + 5 // {"seg":}
	}
	return n
}

// appendWrap appends v nested under the keys of path.
func appendWrap(b []byte, path ref.Path, v json.RawMessage) []byte {
	for _, seg := range path {
		b = append(b, '{')
		b = appendString(b, seg)
		b = append(b, ':')
	}
	b = append(b, v...)
	for range path {
		b = append(b, '}')
	}
	return b
}

// appendString appends s as a JSON string without HTML escaping.
func appendString(b []byte, s string) []byte {
	if plainString(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	var w bytes.Buffer
	writeString(&w, s)
	return append(b, w.Bytes()...)
}
