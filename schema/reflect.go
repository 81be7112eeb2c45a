package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/invopop/jsonschema"
)

// typeCache maps a reflect.Type to its *typeSchema. Like encoding/json's cache of type
// encoders, it only ever grows with the program's types, and its values never change.
var typeCache sync.Map

type typeSchema struct {
	raw json.RawMessage
	// relaxed takes null for an optional property, as strict OpenAI
	// writes one it leaves out (see Decode); it keeps the schema as
	// written too.
	relaxed *Schema
	err     error
	// tagErr is a tag the reflector dropped (see Check): the schema
	// describes less than the tags say, but validates as they say.
	tagErr error
}

// For returns the JSON Schema of the Go type T, so a Go type can be the single source of
// truth for a tool's parameters or an output. It uses [github.com/invopop/jsonschema]:
// field names follow json tags; a field is required unless tagged omitempty or
// omitzero; a struct allows no other properties and a map allows any key; descriptions
// and keywords come from tags such as
//
//	Amount float64 `json:"amount" jsonschema:"description=Amount in cents,minimum=0"`
//
// or `jsonschema_description:"..."` for text with commas. The schema is inline, without
// "$schema", "$id" or "$defs", except that a recursive type keeps its definitions in
// "$defs". The output is deterministic: properties in field order, other keys in a
// fixed order. The result is computed once per type.
//
// For panics on a type it cannot describe (a channel, a function); [Check] returns
// that as an error, and reports tags the reflector would drop.
func For[T any]() json.RawMessage {
	ts := typeSchemaOf(reflect.TypeFor[T]())
	if ts.raw == nil {
		panic("schema: For: " + ts.err.Error())
	}
	return bytes.Clone(ts.raw)
}

func typeSchemaOf(t reflect.Type) *typeSchema {
	if v, ok := typeCache.Load(t); ok {
		return v.(*typeSchema)
	}
	ts := &typeSchema{}
	ts.raw, ts.err = reflectSchema(t)
	if ts.err == nil {
		if err := checkTags(t, map[reflect.Type]bool{}); err != nil {
			ts.tagErr = fmt.Errorf("schema of %v: %w", t, err)
		}
		if ts.relaxed, ts.err = (*Registry)(nil).CompileFor(ts.raw, OpenAI); ts.err != nil {
			ts.err = fmt.Errorf("schema of %v: %w", t, ts.err)
		}
	}
	v, _ := typeCache.LoadOrStore(t, ts)
	return v.(*typeSchema)
}

// reflectSchema returns the schema of t, or an error for a type the
// reflector cannot describe (it panics on some).
func reflectSchema(t reflect.Type) (_ json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v has no JSON Schema: %v", t, p)
		}
	}()
	r := &jsonschema.Reflector{Anonymous: true, ExpandedStruct: true, Mapper: integerRange}
	s := r.ReflectFromType(t)
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("%v has no JSON Schema: %w", t, err)
	}
	tree, err := parseTree(b)
	if err != nil {
		return nil, fmt.Errorf("%v has no JSON Schema: %w", t, err)
	}
	root := tree.(*object)
	root.del("$schema")
	root.del("$id")
	return marshalTree(mustWalk(inlineDefs(root), reorder)), nil
}

// integerRange gives the predeclared integer types narrower than int64,
// and the unsigned ones, their range: told only "integer", a model may
// write 300 for a uint8, which then fails to decode where the schema, and
// a strict provider with it, could have said so. A named type is left
// alone: it may encode as something else. A field's own minimum or
// maximum tag still applies over it.
func integerRange(t reflect.Type) *jsonschema.Schema {
	if t.PkgPath() != "" {
		return nil
	}
	var lo, hi int64
	switch t.Kind() {
	case reflect.Int8:
		lo, hi = math.MinInt8, math.MaxInt8
	case reflect.Int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case reflect.Int32:
		lo, hi = math.MinInt32, math.MaxInt32
	case reflect.Uint8:
		hi = math.MaxUint8
	case reflect.Uint16:
		hi = math.MaxUint16
	case reflect.Uint32:
		hi = math.MaxUint32
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return &jsonschema.Schema{Type: "integer", Minimum: "0"} // its top is beyond a float's integers
	default:
		return nil
	}
	return &jsonschema.Schema{Type: "integer", Minimum: json.Number(strconv.FormatInt(lo, 10)), Maximum: json.Number(strconv.FormatInt(hi, 10))}
}

// keyOrder is the order For writes keywords in, for people reading the schema: the
// reflector's own order follows its struct fields ("properties" before "type"). Other
// keywords follow, in the reflector's order.
var keyOrder = []string{"$ref", "type", "title", "description", "enum", "const", "format",
	"properties", "required", "additionalProperties", "items"}

func reorder(o *object) {
	slices.SortStableFunc(o.members, func(a, b member) int {
		return rank(a.key) - rank(b.key)
	})
}

func rank(k string) int {
	if i := slices.Index(keyOrder, k); i >= 0 {
		return i
	}
	return len(keyOrder)
}

// inlineDefs replaces every ref to a "$defs" entry that is not part of a cycle with a
// copy of the entry, and removes the entries no longer referred to.
func inlineDefs(root *object) *object {
	d, _ := root.get("$defs")
	defs, _ := d.(*object)
	if defs == nil {
		defs = &object{}
	}
	// ExpandedStruct moves the root type out of $defs: its refs mean the root.
	root, _ = mustWalk(root, func(o *object) {
		ref, _ := o.get("$ref")
		s, _ := ref.(string)
		if key, ok := strings.CutPrefix(s, "#/$defs/"); ok && !defs.has(unescapeToken(key)) {
			o.set("$ref", "#")
		}
	}).(*object)
	if len(defs.members) == 0 {
		return root
	}
	recursive := map[string]bool{}
	for _, m := range defs.members {
		in := &inliner{memo: map[string]any{}}
		if _, err := in.inline(m.val, root, "", []string{"#/$defs/" + escapeToken(m.key)}); errors.Is(err, ErrRecursive) {
			recursive[m.key] = true
		}
	}
	var inline func(v any) any
	inline = func(v any) any {
		out, _ := walk(v, "", func(o *object, _ string) (any, error) {
			ref, _ := o.get("$ref")
			s, _ := ref.(string)
			key, ok := strings.CutPrefix(s, "#/$defs/")
			if !ok || recursive[unescapeToken(key)] {
				return o, nil
			}
			target, _ := defs.get(unescapeToken(key))
			return mergeRef(o, inline(target), "")
		})
		return out
	}
	out := inline(root).(*object)
	kept := &object{}
	for _, m := range defs.members {
		if recursive[m.key] {
			kept.set(m.key, inline(m.val))
		}
	}
	if len(kept.members) == 0 {
		out.del("$defs")
	} else {
		out.set("$defs", kept)
	}
	return out
}

// Decode validates data against the schema of T (see [For]) and decodes it into a T.
// It returns a [*ValidationError] when data does not conform, a [*DecodeError] when it
// conforms but cannot be decoded, or an error wrapping [ErrInvalidJSON]. A null for an
// optional field counts as the field left out, as strict structured-output modes
// (OpenAI's) have the model write null for every optional property it leaves out: an
// answer to For[T] adapted to [OpenAI] decodes.
func Decode[T any](data json.RawMessage) (T, error) {
	var v T
	ts := typeSchemaOf(reflect.TypeFor[T]())
	if ts.err != nil {
		return v, ts.err
	}
	data, err := ts.relaxed.Accept(data)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(data, &v); err != nil {
		de := &DecodeError{Err: err}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if at, ok := pointerAt(data, te.Offset-1); ok {
				de.InstancePath = at
			} else if te.Field != "" {
				de.InstancePath = pointer(strings.Split(te.Field, "."))
			}
		}
		return v, de
	}
	return v, nil
}

// pointerAt returns the JSON pointer of the innermost value of data that
// holds the byte at off, or of the member whose key starts there; false
// when there is none. encoding/json says where a value it cannot decode
// ends (where an object or array starts, where a key starts) but names
// only the struct fields on the way to it: not a map's key, not an
// array's index.
func pointerAt(data []byte, off int64) (string, bool) {
	if off < 0 {
		return "", false
	}
	type frame struct {
		object  bool
		wantKey bool
		key     string // the member being read, in an object
		index   int    // the element being read, in an array
	}
	var stack []*frame
	var tokens []string // the pointer of the innermost open container
	member := func() []string {
		if len(stack) == 0 {
			return tokens
		}
		f := stack[len(stack)-1]
		m := f.key
		if !f.object {
			m = strconv.Itoa(f.index)
		}
		return append(slices.Clip(tokens), m)
	}
	done := func() { // a value of the innermost container ended
		if len(stack) > 0 {
			f := stack[len(stack)-1]
			f.wantKey = f.object
			f.index++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		start := dec.InputOffset()
		for start < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[start]) >= 0 {
			start++
		}
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		end := dec.InputOffset()
		if len(stack) > 0 && stack[len(stack)-1].wantKey {
			if key, ok := tok.(string); ok {
				stack[len(stack)-1].key, stack[len(stack)-1].wantKey = key, false
				if start == off {
					return pointer(member()), true
				}
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			at := member()
			if start == off {
				return pointer(at), true
			}
			stack = append(stack, &frame{object: tok == json.Delim('{'), wantKey: tok == json.Delim('{')})
			tokens = at
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return "", false
			}
			tokens = tokens[:len(tokens)-1]
			done()
		default:
			if start <= off && off < end {
				return pointer(member()), true
			}
			if len(stack) == 0 {
				return "", false
			}
			done()
		}
	}
}

// mustWalk applies f to every schema object of v, which cannot fail.
func mustWalk(v any, f func(o *object)) any {
	out, _ := walk(v, "", func(o *object, _ string) (any, error) {
		f(o)
		return o, nil
	})
	return out
}
