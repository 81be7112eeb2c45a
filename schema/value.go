package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// This file holds the order-preserving JSON tree that schema rewrites work on. Property
// order is meaning for an LLM (it writes fields in schema order), so a rewrite must never
// sort keys the way map[string]any would.

// member is one name/value pair of an object.
type member struct {
	key string
	val any
}

// object is a JSON object that keeps its members in document order. Values in the tree
// are nil, bool, json.Number, string, []any and *object.
type object struct {
	members []member
}

func (o *object) get(k string) (any, bool) {
	for _, m := range o.members {
		if m.key == k {
			return m.val, true
		}
	}
	return nil, false
}

func (o *object) has(k string) bool {
	_, ok := o.get(k)
	return ok
}

// set replaces the value of k in place, or appends k.
func (o *object) set(k string, v any) {
	for i := range o.members {
		if o.members[i].key == k {
			o.members[i].val = v
			return
		}
	}
	o.members = append(o.members, member{k, v})
}

func (o *object) del(k string) {
	for i := range o.members {
		if o.members[i].key == k {
			o.members = append(o.members[:i:i], o.members[i+1:]...)
			return
		}
	}
}

// clone copies o shallowly: the members slice is new, the values are shared.
func (o *object) clone() *object {
	return &object{members: append([]member(nil), o.members...)}
}

// parseTree decodes one JSON value into a tree, keeping object key order. A repeated key
// keeps its first position and its last value, as encoding/json keeps the last value.
func parseTree(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid character after top-level value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			o := &object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(kt.(string), v)
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", tok)
	default:
		return tok, nil // nil, bool, json.Number, string
	}
}

// marshalTree encodes a tree compactly, members in order, without HTML escaping.
func marshalTree(v any) []byte {
	return appendTree(nil, v)
}

func appendTree(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, v)
	case json.Number:
		return append(b, v...)
	case string:
		return appendString(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendTree(b, e)
		}
		return append(b, ']')
	case *object:
		b = append(b, '{')
		for i, m := range v.members {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, m.key)
			b = append(b, ':')
			b = appendTree(b, m.val)
		}
		return append(b, '}')
	case float64:
		return strconv.AppendFloat(b, v, 'g', -1, 64)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	}
	panic(fmt.Sprintf("schema: unexpected %T in tree", v))
}

// appendString writes s as a JSON string, escaping only what JSON requires.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// plain converts a tree into the map[string]any form the validator library reads.
func plain(v any) any {
	switch v := v.(type) {
	case *object:
		m := make(map[string]any, len(v.members))
		for _, e := range v.members {
			m[e.key] = plain(e.val)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = plain(e)
		}
		return a
	}
	return v
}
