// Package flatjson decodes JSON objects into structs of plain fields
// (integers, booleans, strings) without encoding/json's reflection walk,
// for the typed parameters of tools (schema.Decode, agent.Bind). It takes
// only what it is sure of and leaves everything else, errors included, to
// validation and json.Unmarshal.
package flatjson

import (
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/augceo/agent/internal/jsonfast"
)

// Decoder decodes JSON into one struct type of plain fields. It accepts
// an object whose members are exactly fields (no escapes, no duplicates,
// no unknown keys), every required one present (those without
// omitempty), each value of its field's JSON type and in range: what the
// struct's plain schema ([Decoder.Schema]) accepts and json.Unmarshal
// decodes without error. A Decoder is immutable.
type Decoder struct {
	fields []field
	schema string
}

type field struct {
	name     string
	index    int
	kind     reflect.Kind
	required bool
}

// New returns the decoder of t, or nil when t is not a struct of
// exported, non-embedded integer, boolean and string fields with plain
// names, no json option but omitempty and no jsonschema tags.
func New(t reflect.Type) *Decoder {
	if t.Kind() != reflect.Struct || t.NumField() == 0 || t.NumField() > 64 {
		return nil
	}
	d := &Decoder{}
	var props, req []string
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Anonymous {
			return nil
		}
		if _, ok := sf.Tag.Lookup("jsonschema"); ok || strings.Contains(string(sf.Tag), "jsonschema_") {
			return nil
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" {
			name = sf.Name
		}
		if !PlainName(name) || (opts != "" && opts != "omitempty") {
			return nil
		}
		typ := JSONType(sf.Type.Kind())
		if typ == "" {
			return nil
		}
		f := field{name: name, index: i, kind: sf.Type.Kind(), required: opts == ""}
		d.fields = append(d.fields, f)
		props = append(props, `"`+name+`":{"type":"`+typ+`"}`)
		if f.required {
			req = append(req, `"`+name+`"`)
		}
	}
	d.schema = `{"type":"object","properties":{` + strings.Join(props, ",") + `}`
	if len(req) > 0 {
		d.schema += `,"required":[` + strings.Join(req, ",") + `]`
	}
	d.schema += `,"additionalProperties":false}`
	return d
}

// Schema returns the plain schema of the struct: the JSON Schema whose
// instances the decoder takes, as schema.For writes it for a struct
// without constraints. A caller checks that it is the struct's schema
// before trusting the decoder to stand for validation.
func (d *Decoder) Schema() string { return d.schema }

// Meta reports whether a field's name starts with "_", as meta-properties
// of a call do.
func (d *Decoder) Meta() bool {
	for _, f := range d.fields {
		if strings.HasPrefix(f.name, "_") {
			return true
		}
	}
	return false
}

// JSONType returns the JSON Schema type of a flat field of kind k,
// "integer", "boolean" or "string", and "" for any other kind.
func JSONType(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	}
	return ""
}

// PlainName reports whether a member name needs no escaping and is not
// one encoding/json treats specially.
func PlainName(s string) bool {
	if s == "" || s == "-" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Decode sets the fields of v, an addressable struct of d's type, from
// data; ok is false when data is not plainly valid for it, and v may then
// be partly set. With skipMeta, members whose key starts with "_" are
// skipped, as if removed first; data must then be valid JSON.
func (d *Decoder) Decode(data []byte, v reflect.Value, skipMeta bool) (ok bool) {
	var seen uint64
	i := SkipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = SkipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		i++
	} else {
		for {
			if i >= len(data) || data[i] != '"' {
				return false
			}
			s, esc, end, ok := ScanString(data, i)
			if !ok || esc {
				return false
			}
			if i = SkipWS(data, end); i >= len(data) || data[i] != ':' {
				return false
			}
			i++
			if skipMeta && len(s) > 0 && s[0] == '_' {
				i = jsonfast.Skip(data, i) // valid JSON: nothing to check on the way
			} else {
				k := -1
				for j := range d.fields {
					if d.fields[j].name == string(s) {
						k = j
						break
					}
				}
				if k < 0 || seen&(1<<k) != 0 {
					return false
				}
				seen |= 1 << k
				if i, ok = d.fields[k].set(data, SkipWS(data, i), v); !ok {
					return false
				}
			}
			i = SkipWS(data, i)
			if i < len(data) && data[i] == ',' {
				i = SkipWS(data, i+1)
				continue
			}
			if i < len(data) && data[i] == '}' {
				i++
				break
			}
			return false
		}
	}
	if SkipWS(data, i) != len(data) {
		return false
	}
	for j := range d.fields {
		if d.fields[j].required && seen&(1<<j) == 0 {
			return false
		}
	}
	return true
}

// set decodes the value at data[i] into the field; it returns the offset
// past it.
func (ff *field) set(data []byte, i int, v reflect.Value) (int, bool) {
	fv := v.Field(ff.index)
	switch ff.kind {
	case reflect.Bool:
		switch {
		case HasLiteral(data, i, "true"):
			fv.SetBool(true)
			return i + 4, true
		case HasLiteral(data, i, "false"):
			fv.SetBool(false)
			return i + 5, true
		}
		return i, false
	case reflect.String:
		if i >= len(data) || data[i] != '"' {
			return i, false
		}
		s, esc, end, ok := ScanString(data, i)
		if !ok || esc || !utf8.Valid(s) {
			return i, false
		}
		fv.SetString(string(s))
		return end, true
	}
	// An integer: digits only, as encoding/json reads into an integer.
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	start := j
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	if j == start || (data[start] == '0' && j > start+1) {
		return i, false
	}
	if j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E') {
		return i, false
	}
	lit := string(data[i:j])
	if fv.CanInt() {
		n, err := strconv.ParseInt(lit, 10, fv.Type().Bits())
		if err != nil {
			return i, false
		}
		fv.SetInt(n)
		return j, true
	}
	n, err := strconv.ParseUint(lit, 10, fv.Type().Bits())
	if err != nil {
		return i, false
	}
	fv.SetUint(n)
	return j, true
}

// HasLiteral reports whether d holds lit at i.
func HasLiteral(d []byte, i int, lit string) bool {
	return len(d)-i >= len(lit) && string(d[i:i+len(lit)]) == lit
}

// SkipWS returns the offset of the first non-space byte at or after i.
func SkipWS(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t') {
		i++
	}
	return i
}

// ScanString scans the string starting at d[i] == '"'. It returns its raw content and
// whether that contains escapes (then the content is not the decoded string).
func ScanString(d []byte, i int) (s []byte, esc bool, end int, ok bool) {
	s, esc, _, end, ok = ScanStringUTF8(d, i)
	return s, esc, end, ok
}

// ScanStringUTF8 is ScanString that also reports whether the raw string
// is valid UTF-8, checked only when a byte of it is not ASCII: keys and
// most values are, and a second pass over them would cost as much as the
// scan.
func ScanStringUTF8(d []byte, i int) (s []byte, esc, valid bool, end int, ok bool) {
	if i >= len(d) || d[i] != '"' {
		return nil, false, false, 0, false
	}
	start := i + 1
	valid = true
	for j := start; j < len(d); j++ {
		j = jsonfast.PlainASCIIEnd(d, j)
		if j >= len(d) {
			break
		}
		switch c := d[j]; {
		case c == '"':
			return d[start:j], esc, valid, j + 1, true
		case c == '\\':
			esc = true
			j++
			if j >= len(d) {
				return nil, false, false, 0, false
			}
			switch d[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(d) {
					return nil, false, false, 0, false
				}
				for _, h := range d[j+1 : j+5] {
					if !isHex(h) {
						return nil, false, false, 0, false
					}
				}
				j += 4
			default:
				return nil, false, false, 0, false
			}
		case c < 0x20:
			return nil, false, false, 0, false
		default: // not ASCII: checked here, not in a second pass
			if n := jsonfast.RuneLen(d, j); n > 0 {
				j += n - 1
			} else {
				valid = false
			}
		}
	}
	return nil, false, false, 0, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
