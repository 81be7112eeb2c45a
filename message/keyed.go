package message

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/ref"
)

// keyed is the last value set at one top-level key of a keyed view.
type keyed struct {
	key   string
	value json.RawMessage
	canon bool // value is canonical: as ref.Encode writes its decoding
}

// keyedMax is how many keys a view keeps keyed; past it, a lookup in the
// materialised value is cheaper than a search, and inserting a key into
// the sorted list would cost its length.
const keyedMax = 64

// keyedWrite reports whether v can keep w keyed: it is a set at one
// top-level key, and that key is already there or there is room.
func (v *view) keyedWrite(w write) bool {
	if w.method != ref.MethodSet || len(w.path) != 1 {
		return false
	}
	if len(v.keyed) < keyedMax {
		return true
	}
	_, found := v.findKey(w.path[0])
	return found
}

// findKey returns where k is or would be in the sorted keys.
func (v *view) findKey(k string) (int, bool) {
	lo, hi := 0, len(v.keyed)
	if hi > 0 && v.keyed[hi-1].key < k { // past the last: keys often come in order
		return hi, false
	}
	for lo < hi { // a binary search written out: lookups run it often
		m := int(uint(lo+hi) >> 1)
		if v.keyed[m].key < k {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(v.keyed) && v.keyed[lo].key == k
}

// setKey records w, a keyed write.
func (v *view) setKey(w write) {
	kv := keyed{key: w.path[0], value: w.value, canon: canonical(w.value)}
	i, found := v.findKey(kv.key)
	if found {
		v.keyed[i] = kv
		return
	}
	if v.keyed == nil {
		if v.spare != nil { // what the room held before is stale: never read
			v.keyed = v.spare.keyed[:0]
		} else {
			v.keyed = make([]keyed, 0, smallView)
		}
	}
	if i == len(v.keyed) { // keys often come in order: r0, r1...
		v.keyed = append(roomForOne(v.keyed), kv)
		return
	}
	v.keyed = slices.Insert(roomForOne(v.keyed), i, kv)
}

// keyWrites returns the keyed values as writes, with room for n. They are
// at distinct keys, so their order does not matter to a fold, and a
// value replaced at its key would have been skipped by one.
func (v *view) keyWrites(n int) []write {
	ws := make([]write, len(v.keyed), max(n, len(v.keyed)))
	for i, kv := range v.keyed {
		ws[i] = write{path: ref.Path{kv.key}, method: ref.MethodSet, value: kv.value}
	}
	return ws
}

// rawWrites returns the writes of a view that is not materialised, as
// fold takes them.
func (v *view) rawWrites() []write {
	if v.keyed != nil {
		return v.keyWrites(0)
	}
	return v.small
}

// getKeyed reads path in a keyed view, giving what [fold] gives over the
// writes: the value of the one write at path's first key, looked up and
// encoded, or the whole object of the keys.
func (v *view) getKeyed(path ref.Path) (json.RawMessage, error) {
	if len(path) == 0 {
		return v.encodeKeyed()
	}
	i, found := v.findKey(path[0])
	if !found {
		return nil, &ref.Error{Offset: -1, At: path.String(), Err: ref.ErrNotFound}
	}
	kv := &v.keyed[i]
	if kv.canon {
		if raw, ok := member(kv.value, path[1:]); ok {
			return bytes.Clone(raw), nil // the caller owns it
		}
	}
	x, err := ref.Decode(kv.value)
	if err != nil {
		return nil, err
	}
	// The document the write makes, so errors name the whole path.
	x, err = ref.Get(map[string]any{kv.key: x}, path)
	if err != nil {
		return nil, err
	}
	return ref.Encode(x)
}

// encodeKeyed returns the object of every key, as ref.Encode writes it.
func (v *view) encodeKeyed() (json.RawMessage, error) {
	n := 2
	for i := range v.keyed {
		kv := &v.keyed[i]
		if !kv.canon || !plainString(kv.key) {
			return v.encodeDecoded()
		}
		n += len(kv.key) + 4 + len(kv.value) // "key":value,
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i := range v.keyed {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, v.keyed[i].key...)
		b = append(b, '"', ':')
		b = append(b, v.keyed[i].value...)
	}
	return append(b, '}'), nil
}

// encodeDecoded is encodeKeyed for values or keys that need the encoder.
func (v *view) encodeDecoded() (json.RawMessage, error) {
	doc := make(map[string]any, len(v.keyed))
	for _, kv := range v.keyed {
		x, err := ref.Decode(kv.value)
		if err != nil {
			return nil, err
		}
		doc[kv.key] = x
	}
	return ref.Encode(doc)
}

// member returns the raw value at path in a canonical value, following
// object keys only; ok is false when path goes anywhere else, which the
// caller resolves the general way.
func member(raw []byte, path ref.Path) (_ []byte, ok bool) {
	for _, seg := range path {
		if len(raw) == 0 || raw[0] != '{' {
			return nil, false
		}
		// Canonical JSON is compact and its keys have no escapes: each
		// member is "key":value, the key's quotes the next ones.
		var next []byte
		for i := 1; i < len(raw) && raw[i] == '"'; {
			end := bytes.IndexByte(raw[i+1:], '"')
			if end < 0 {
				return nil, false
			}
			key := raw[i+1 : i+1+end]
			start := i + end + 3 // past the closing quote and ':'
			j := jsonfast.Skip(raw, start)
			if string(key) == seg {
				next = raw[start:j]
				break
			}
			if i = j; i < len(raw) && raw[i] == ',' {
				i++
			}
		}
		if next == nil {
			return nil, false
		}
		raw = next
	}
	return raw, true
}

// canonDepth is how deep canonical looks before it gives up.
const canonDepth = 64

// canonical reports whether raw is valid JSON that ref.Encode writes as
// it is once decoded: compact, with object keys in strictly increasing
// order, and strings of printable ASCII without escapes. A value it
// declines is decoded and encoded, which is slower but gives the same.
func canonical(raw []byte) bool {
	i, ok := canonValue(raw, 0, 0)
	return ok && i == len(raw)
}

func canonValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > canonDepth {
		return i, false
	}
	switch c := b[i]; c {
	case '{':
		i++
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		var prev []byte
		for first := true; ; first = false {
			j, ok := canonString(b, i)
			if !ok {
				return j, false
			}
			key := b[i+1 : j-1]
			if !first && bytes.Compare(prev, key) >= 0 {
				return j, false
			}
			prev = key
			if j >= len(b) || b[j] != ':' {
				return j, false
			}
			if i, ok = canonValue(b, j+1, depth+1); !ok || i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '}':
				return i + 1, true
			case ',':
				i++
			default:
				return i, false
			}
		}
	case '[':
		i++
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = canonValue(b, i, depth+1); !ok || i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ']':
				return i + 1, true
			case ',':
				i++
			default:
				return i, false
			}
		}
	case '"':
		return canonString(b, i)
	case 't':
		return canonLiteral(b, i, "true")
	case 'f':
		return canonLiteral(b, i, "false")
	case 'n':
		return canonLiteral(b, i, "null")
	}
	return canonNumber(b, i)
}

func canonLiteral(b []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return i, false
	}
	return i + len(lit), true
}

// canonString reads a string of printable ASCII without escapes, as
// ref.Encode writes every string it does not need to escape.
func canonString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return i, false
		}
	}
	return i, false
}

// canonNumber reads a JSON number, which decoding keeps as written.
func canonNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
