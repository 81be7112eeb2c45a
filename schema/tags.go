package schema

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Check reports what [For] cannot say of T: a type with no JSON Schema (a
// channel, a function), on which For panics, and a jsonschema struct tag
// part that is not keyword=value with a keyword the reflector reads, which
// it drops without a word. That is nearly always a description cut at a
// comma, or a space after one:
//
//	Note string `jsonschema:"description=Why it is looked up, for the audit log"`
//
// describes Note as "Why it is looked up". Check also reports a tag
// that is not valid struct tag syntax (a comma escaped as \, where the
// source needs \\,), which the reflector reads as no tag at all. A description with commas goes
// in a jsonschema_description tag, or has each comma escaped as \, in
// the tag's value, which a struct tag writes \\, (Go unquotes it).
// agent.Func and agent.RequestAs return the same error, before anything
// is sent to a model. [Decode] only minds the first, and validates with
// the schema For gives.
func Check[T any]() error {
	ts := typeSchemaOf(reflect.TypeFor[T]())
	return cmp.Or(ts.err, ts.tagErr)
}

// checkTags returns an error for the first jsonschema tag part of t's
// structs, at any depth, that the reflector drops: one that is neither a
// flag it knows nor keyword=value with a keyword it reads, or a whole
// jsonschema or jsonschema_description tag that is not valid struct tag
// syntax, which reflect reads as no tag. A type that
// gives its own schema has its fields' tags unread.
func checkTags(t reflect.Type, seen map[reflect.Type]bool) error {
	for !describesItself(t) && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || describesItself(t) {
		return nil
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous || f.Tag.Get("json") == "-" {
			continue
		}
		for _, key := range []string{"jsonschema", "jsonschema_description"} {
			// A tag Go cannot unquote (a lone \, in it) reads as no tag.
			if _, ok := f.Tag.Lookup(key); !ok && strings.Contains(string(f.Tag), key+`:"`) {
				return fmt.Errorf("%v.%s: struct tag `%s` is not valid tag syntax, so its %s is not read: %s", t, f.Name, f.Tag, key, tagHint)
			}
		}
		parts := splitTag(f.Tag.Get("jsonschema"))
		if parts[0] == "-" {
			continue
		}
		for _, p := range parts {
			key, _, isKV := strings.Cut(p, "=")
			switch {
			case p == "" || p == "required" || p == "nullable" || isKV && slices.Contains(tagKeywords, key):
			case !isKV:
				return fmt.Errorf("%v.%s: jsonschema tag part %q is not keyword=value: %s", t, f.Name, p, tagHint)
			default:
				return fmt.Errorf("%v.%s: jsonschema tag part %q: %q is no keyword the reflector reads: %s", t, f.Name, p, key, tagHint)
			}
		}
		if err := checkTags(f.Type, seen); err != nil {
			return err
		}
	}
	return nil
}

// tagKeywords are the keywords of a jsonschema tag that the reflector
// (github.com/invopop/jsonschema v0.14) reads; it drops any other.
var tagKeywords = []string{"title", "description", "type", "anchor", "default", "example", "enum",
	"format", "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
	"exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems", "readOnly", "writeOnly",
	"oneof_required", "anyof_required", "oneof_ref", "anyof_ref", "oneof_type", "anyof_type"}

const tagHint = "a description with commas goes in a jsonschema_description tag, or escape each comma, written \\\\, in the struct tag"

// describesItself reports whether the reflector asks t for its schema
// (a JSONSchema or JSONSchemaAlias method) rather than reading its fields.
func describesItself(t reflect.Type) bool {
	for _, m := range []string{"JSONSchema", "JSONSchemaAlias"} {
		if _, ok := t.MethodByName(m); ok {
			return true
		}
		if t.Kind() != reflect.Pointer {
			if _, ok := reflect.PointerTo(t).MethodByName(m); ok {
				return true
			}
		}
	}
	return false
}

// splitTag splits a jsonschema tag at the commas not escaped as \, as
// the reflector does.
func splitTag(tag string) []string {
	parts := strings.Split(tag, ",")
	out := []string{parts[0]}
	for _, p := range parts[1:] {
		if last := out[len(out)-1]; strings.HasSuffix(last, `\`) {
			out[len(out)-1] = last[:len(last)-1] + "," + p
		} else {
			out = append(out, p)
		}
	}
	return out
}
