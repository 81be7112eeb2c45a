package schema

import (
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// flat decodes JSON into a struct of plain fields (integers, booleans,
// strings) whose schema is the plain one For derives from it, without
// encoding/json's reflection walk. It takes only what it is sure of: an
// object whose members are exactly fields (no escapes, no duplicates, no
// unknown keys), every required one present, each value of its field's
// JSON type and in range. Anything else goes the slow way, validation
// then json.Unmarshal, which gives the errors.
type flat struct {
	fields []flatField
}

type flatField struct {
	name     string
	index    int
	kind     reflect.Kind
	required bool
}

// flatOf returns the flat decoder of t, or nil when t is not such a
// struct or its schema raw is not the plain one.
func flatOf(t reflect.Type, raw []byte) *flat {
	if t.Kind() != reflect.Struct || t.NumField() == 0 {
		return nil
	}
	f := &flat{}
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
		if !plainName(name) || (opts != "" && opts != "omitempty") {
			return nil
		}
		var typ string
		switch sf.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			typ = "integer"
		case reflect.Bool:
			typ = "boolean"
		case reflect.String:
			typ = "string"
		default:
			return nil
		}
		ff := flatField{name: name, index: i, kind: sf.Type.Kind(), required: opts == ""}
		f.fields = append(f.fields, ff)
		props = append(props, `"`+name+`":{"type":"`+typ+`"}`)
		if ff.required {
			req = append(req, `"`+name+`"`)
		}
	}
	want := `{"type":"object","properties":{` + strings.Join(props, ",") + `}`
	if len(req) > 0 {
		want += `,"required":[` + strings.Join(req, ",") + `]`
	}
	want += `,"additionalProperties":false}`
	if string(raw) != want {
		return nil
	}
	return f
}

// plainName reports whether a member name needs no escaping and is not
// one encoding/json treats specially.
func plainName(s string) bool {
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

// decode sets the fields of v, an addressable struct of f's type, from
// data; ok is false when data is not plainly valid for it, and v may then
// be partly set.
func (f *flat) decode(data []byte, v reflect.Value) (ok bool) {
	var seen uint64
	if len(f.fields) > 64 {
		return false
	}
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		i++
	} else {
		for {
			if i >= len(data) || data[i] != '"' {
				return false
			}
			s, esc, end, ok := scanString(data, i)
			if !ok || esc {
				return false
			}
			k := -1
			for j := range f.fields {
				if f.fields[j].name == string(s) {
					k = j
					break
				}
			}
			if k < 0 || seen&(1<<k) != 0 {
				return false
			}
			seen |= 1 << k
			i = skipWS(data, end)
			if i >= len(data) || data[i] != ':' {
				return false
			}
			i = skipWS(data, i+1)
			if i, ok = f.fields[k].set(data, i, v); !ok {
				return false
			}
			i = skipWS(data, i)
			if i < len(data) && data[i] == ',' {
				i = skipWS(data, i+1)
				continue
			}
			if i < len(data) && data[i] == '}' {
				i++
				break
			}
			return false
		}
	}
	if skipWS(data, i) != len(data) {
		return false
	}
	for j := range f.fields {
		if f.fields[j].required && seen&(1<<j) == 0 {
			return false
		}
	}
	return true
}

// set decodes the value at data[i] into the field; it returns the offset
// past it.
func (ff *flatField) set(data []byte, i int, v reflect.Value) (int, bool) {
	fv := v.Field(ff.index)
	switch ff.kind {
	case reflect.Bool:
		switch {
		case hasLiteral(data, i, "true"):
			fv.SetBool(true)
			return i + 4, true
		case hasLiteral(data, i, "false"):
			fv.SetBool(false)
			return i + 5, true
		}
		return i, false
	case reflect.String:
		if i >= len(data) || data[i] != '"' {
			return i, false
		}
		s, esc, end, ok := scanString(data, i)
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
