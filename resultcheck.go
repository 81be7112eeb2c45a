package agent

import (
	"encoding/json"
	"slices"
)

// A bound function whose result is a flat struct encodes values of one
// shape: an object of its fields, each an integer, a boolean or a plain
// string. When a tool's _output asks no more than that shape holds, every
// value the encoder makes meets it, and checking each result again would
// only prove what the types already do. implies answers that question on
// the schema's text, conservatively: any keyword it does not know, any
// constraint on a value (minimum, pattern, enum...), and the answer is no,
// and the result is validated as usual.

// impliedResult is whether a tool's _output accepts every value of an
// encoder, as last asked.
type impliedResult struct {
	enc *flatEnc
	ok  bool
}

// resultImplied reports whether every value enc makes meets s.result,
// remembering the answer for the encoder last asked about.
func (s *shaped) resultImplied(enc *flatEnc) bool {
	if r := s.implied.Load(); r != nil && r.enc == enc {
		return r.ok
	}
	ok := enc.implies(s.result)
	s.implied.Store(&impliedResult{enc: enc, ok: ok})
	return ok
}

// annotations are the keywords that constrain nothing.
var annotations = []string{"title", "description", "$comment", "default", "examples", "deprecated", "readOnly", "writeOnly"}

// implies reports whether every object e encodes is valid against the
// JSON Schema s.
func (e *flatEnc) implies(s json.RawMessage) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(s, &top) != nil {
		return false
	}
	var props map[string]json.RawMessage
	addl := true // fields the schema does not declare are allowed
	for k, v := range top {
		switch k {
		case "type":
			if !typeAllows(v, "object") {
				return false
			}
		case "properties":
			if json.Unmarshal(v, &props) != nil {
				return false
			}
		case "additionalProperties":
			if json.Unmarshal(v, &addl) != nil {
				return false // a schema for them: the library judges
			}
		case "required":
			var req []string
			if json.Unmarshal(v, &req) != nil {
				return false
			}
			for _, name := range req {
				if i := e.field(name); i < 0 || e.fields[i].omitEmpty {
					return false
				}
			}
		default:
			if !slices.Contains(annotations, k) {
				return false
			}
		}
	}
	if _, ok := top["type"]; !ok {
		return false // the value must be an object: say so, not by default
	}
	for _, f := range e.fields {
		p, ok := props[f.name()]
		if !ok {
			if !addl {
				return false
			}
			continue
		}
		if !propertyAllows(p, f.jsonType) {
			return false
		}
	}
	return true
}

// field returns the index of the field encoded under name, or -1.
func (e *flatEnc) field(name string) int {
	return slices.IndexFunc(e.fields, func(f flatEncField) bool { return f.name() == name })
}

// name returns the member name the field is encoded under.
func (f flatEncField) name() string { return f.key[1 : len(f.key)-2] }

// propertyAllows reports whether the schema of a property accepts every
// value of JSON type t.
func propertyAllows(p json.RawMessage, t string) bool {
	if string(p) == "true" {
		return true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(p, &m) != nil {
		return false
	}
	for k, v := range m {
		if k == "type" {
			if !typeAllows(v, t) {
				return false
			}
		} else if !slices.Contains(annotations, k) {
			return false
		}
	}
	return true
}

// typeAllows reports whether the type keyword v admits values of JSON
// type t; an integer is a number too. Every name must be a JSON Schema
// type, or the schema is left to the library to judge.
func typeAllows(v json.RawMessage, t string) bool {
	var names []string
	if json.Unmarshal(v, &names) != nil {
		var one string
		if json.Unmarshal(v, &one) != nil {
			return false
		}
		names = []string{one}
	}
	allows := false
	for _, n := range names {
		switch n {
		case "object", "array", "string", "integer", "number", "boolean", "null":
		default:
			return false
		}
		allows = allows || n == t || n == "number" && t == "integer"
	}
	return allows
}
