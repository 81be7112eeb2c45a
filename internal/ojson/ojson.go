// Package ojson edits JSON objects while keeping the order of their keys.
// Key order matters to an LLM, which writes a schema's properties in the
// order it reads them, and encoding/json's maps lose it.
package ojson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/augceo/agent/internal/jsonfast"
)

// Object is a JSON object as an ordered list of members. Its values are
// compact, valid JSON: Parse compacts what it reads, and whoever sets a
// value gives it so (constants, Bytes, Parse's values). Bytes can then
// join them without scanning each one again, which made shaping a tool
// cost a scan per nesting level.
type Object struct {
	Keys   []string
	Values []json.RawMessage
}

// Parse parses a JSON object. Its values are compacted copies: they do
// not alias data.
func Parse(data []byte) (*Object, error) {
	var c bytes.Buffer
	c.Grow(len(data))
	if err := json.Compact(&c, data); err != nil {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, err // says where, which Compact does not
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if c.Len() == 0 || c.Bytes()[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	o := &Object{}
	jsonfast.Members(c.Bytes(), func(k string, v []byte) bool {
		o.Set(k, v)
		return true
	})
	return o, nil
}

// Get returns the value of key k, or nil.
func (o *Object) Get(k string) json.RawMessage {
	if i := o.index(k); i >= 0 {
		return o.Values[i]
	}
	return nil
}

// Has reports whether k is a key of o.
func (o *Object) Has(k string) bool { return o.index(k) >= 0 }

// Set replaces the value of k in place, or appends k.
func (o *Object) Set(k string, v json.RawMessage) {
	if i := o.index(k); i >= 0 {
		o.Values[i] = v
		return
	}
	o.Keys = append(o.Keys, k)
	o.Values = append(o.Values, v)
}

// Grow makes room for n more members.
func (o *Object) Grow(n int) {
	o.Keys = slices.Grow(o.Keys, n)
	o.Values = slices.Grow(o.Values, n)
}

// SetFirst puts k first, removing it from where it was.
func (o *Object) SetFirst(k string, v json.RawMessage) {
	o.Delete(k)
	o.Keys = append([]string{k}, o.Keys...)
	o.Values = append([]json.RawMessage{v}, o.Values...)
}

// Delete removes k.
func (o *Object) Delete(k string) {
	if i := o.index(k); i >= 0 {
		o.Keys = append(o.Keys[:i:i], o.Keys[i+1:]...)
		o.Values = append(o.Values[:i:i], o.Values[i+1:]...)
	}
}

func (o *Object) index(k string) int {
	for i, key := range o.Keys {
		if key == k {
			return i
		}
	}
	return -1
}

// MarshalJSON writes the members in order, compact, without HTML escaping.
func (o *Object) MarshalJSON() ([]byte, error) { return o.Bytes(), nil }

// Bytes is the object as JSON: its members in order, compact, without
// HTML escaping.
func (o *Object) Bytes() json.RawMessage {
	n := 2
	for i, k := range o.Keys {
		n += len(k) + len(o.Values[i]) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range o.Keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendQuote(b, k), ':')
		b = append(b, o.Values[i]...)
	}
	return append(b, '}')
}

// String encodes s as a JSON string without HTML escaping.
func String(s string) (json.RawMessage, error) {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			simple = false
			break
		}
	}
	if simple { // the common case: no escaping needed
		b := make([]byte, 0, len(s)+2)
		return append(append(append(b, '"'), s...), '"'), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Quote encodes s as a JSON string.
func Quote(s string) json.RawMessage {
	b, _ := String(s)
	return b
}

// AppendQuote appends s encoded as a JSON string to dst, as Quote does.
func AppendQuote(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return append(dst, Quote(s)...)
		}
	}
	return append(append(append(dst, '"'), s...), '"')
}
