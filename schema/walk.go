package schema

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Keywords whose value is a schema, a map of schemas or a list of schemas (2020-12, plus
// the draft-07 spellings still found in the wild). Everything else holds data (const,
// enum, default, examples) or annotations and is never walked, so a "$ref" key inside an
// enum value is not mistaken for a reference.
var (
	schemaKeywords = []string{"additionalItems", "additionalProperties", "contains", "else", "if",
		"items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	schemaMapKeywords  = []string{"$defs", "definitions", "dependentSchemas", "dependencies", "patternProperties", "properties"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

// visitFunc rewrites one schema object whose subschemas were already rewritten. ptr is
// the JSON pointer of the schema in its document. It returns the replacement value.
type visitFunc func(o *object, ptr string) (any, error)

// walk rewrites every schema object in the tree v, children before parents, and returns
// the new tree. The input is never modified: each visited object is a fresh clone.
func walk(v any, ptr string, f visitFunc) (any, error) {
	o, ok := v.(*object)
	if !ok {
		return v, nil // a boolean schema, or a value that is not a schema
	}
	o = o.clone()
	for i, m := range o.members {
		p := ptr + "/" + escapeToken(m.key)
		var err error
		switch {
		case slices.Contains(schemaKeywords, m.key):
			if list, ok := m.val.([]any); ok && m.key == "items" { // draft-07 tuple form
				o.members[i].val, err = walkList(list, p, f)
			} else {
				o.members[i].val, err = walk(m.val, p, f)
			}
		case slices.Contains(schemaMapKeywords, m.key):
			if mo, ok := m.val.(*object); ok {
				mo = mo.clone()
				for j, sm := range mo.members {
					if mo.members[j].val, err = walk(sm.val, p+"/"+escapeToken(sm.key), f); err != nil {
						break
					}
				}
				o.members[i].val = mo
			}
		case slices.Contains(schemaListKeywords, m.key):
			if list, ok := m.val.([]any); ok {
				o.members[i].val, err = walkList(list, p, f)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return f(o, ptr)
}

func walkList(list []any, ptr string, f visitFunc) ([]any, error) {
	out := make([]any, len(list))
	for i, e := range list {
		var err error
		if out[i], err = walk(e, ptr+"/"+strconv.Itoa(i), f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// translateNullable rewrites the OpenAPI 3.0 keyword "nullable": true, which the spec pages
// use (the solution's output is a nullable object), into JSON Schema 2020-12, where an
// unknown keyword would be ignored and null rejected:
//   - with "type": null joins the type list ("object" becomes ["object","null"]);
//   - with "enum" (or "const", which becomes a one-value enum): null joins the values,
//     since enum alone would still reject null;
//   - with no type but a composition or a $ref: the schema becomes
//     {"anyOf":[<schema>,{"type":"null"}]}, annotations staying outside.
//
// "nullable": false is dropped.
func translateNullable(o *object, _ string) (any, error) {
	n, ok := o.get("nullable")
	if !ok {
		return o, nil
	}
	o.del("nullable")
	if n != true {
		return o, nil
	}
	return makeNullable(o), nil
}

// makeNullable returns o changed to also accept null. o must be a fresh clone.
func makeNullable(o *object) any {
	if c, ok := o.get("const"); ok {
		o.del("const")
		o.set("enum", []any{c})
	}
	if e, ok := o.get("enum"); ok {
		if list, ok := e.([]any); ok && !slices.Contains(list, nil) {
			o.set("enum", append(slices.Clip(list), nil))
		}
	}
	if t, ok := o.get("type"); ok {
		switch t := t.(type) {
		case string:
			if t != "null" {
				o.set("type", []any{t, "null"})
			}
		case []any:
			if !slices.Contains(t, any("null")) {
				o.set("type", append(slices.Clip(t), "null"))
			}
		}
		return o
	}
	if o.has("enum") || !refusesNullBeside(o) {
		return o // no type and nothing that could reject null: null is already valid
	}
	return wrapNullable(o)
}

// refusesNullBeside reports whether o has a keyword beside its type and
// enum that may refuse null: a ref or an applicator.
func refusesNullBeside(o *object) bool {
	return slices.ContainsFunc([]string{"$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "not", "if"}, o.has)
}

// annotationKeywords stay on the outside when a schema is wrapped in an anyOf, so the
// wrapper still reads as the same thing to a human or a model.
var annotationKeywords = []string{"$schema", "$id", "$anchor", "$comment", "$defs", "definitions",
	"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}

func wrapNullable(o *object) *object {
	outer, inner := &object{}, &object{}
	for _, m := range o.members {
		if slices.Contains(annotationKeywords, m.key) {
			outer.members = append(outer.members, m)
		} else {
			inner.members = append(inner.members, m)
		}
	}
	outer.set("anyOf", []any{inner, &object{members: []member{{"type", "null"}}}})
	return outer
}

// escapeToken escapes one JSON pointer reference token (RFC 6901).
func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func unescapeToken(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}

// splitRef splits a $ref into the registered name it refers to ("" for a local ref such
// as "#/$defs/x") and its fragment, which is a JSON pointer, "" for the whole schema.
func splitRef(ref string) (name, frag string, err error) {
	name, frag, _ = strings.Cut(ref, "#")
	if frag, err = url.PathUnescape(frag); err != nil {
		return "", "", fmt.Errorf("%w: %q: %w", ErrInvalidRef, ref, err)
	}
	if frag != "" && frag[0] != '/' {
		return "", "", fmt.Errorf("%w: %q: only JSON pointer fragments are supported", ErrInvalidRef, ref)
	}
	return name, frag, nil
}

// lookupPointer returns the value at the JSON pointer ptr inside the tree doc.
func lookupPointer(doc any, ptr string) (any, bool) {
	return at(doc, tokens(ptr))
}

// tokens returns the reference tokens of the JSON pointer ptr, unescaped:
// none for "", the whole document.
func tokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	toks := strings.Split(ptr[1:], "/")
	for i, t := range toks {
		toks[i] = unescapeToken(t)
	}
	return toks
}

// at returns the value at path in v, a schema's tree or a value decoded
// from JSON.
func at(v any, path []string) (any, bool) {
	for _, tok := range path {
		switch x := v.(type) {
		case *object:
			var ok bool
			if v, ok = x.get(tok); !ok {
				return nil, false
			}
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
