package schema

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"
)

// Check reports what [For] cannot say of T: a type with no JSON Schema (a
// channel, a function), on which For panics, and a jsonschema struct tag
// part that is not keyword=value, which the reflector drops without a
// word. The second is nearly always a description cut at a comma:
//
//	Note string `jsonschema:"description=Why it is looked up, for the audit log"`
//
// describes Note as "Why it is looked up". A description with commas goes
// in a jsonschema_description tag, or has each comma escaped as \,.
// agent.Func and agent.RequestAs return the same error, before anything
// is sent to a model. [Decode] only minds the first: descriptions do not
// change what validates.
func Check[T any]() error {
	ts := typeSchemaOf(reflect.TypeFor[T]())
	return cmp.Or(ts.err, ts.tagErr)
}

// checkTags returns an error for the first jsonschema tag part of t's
// structs, at any depth, that is neither keyword=value nor a flag the
// reflector knows.
func checkTags(t reflect.Type, seen map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return nil
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous || f.Tag.Get("json") == "-" {
			continue
		}
		parts := splitTag(f.Tag.Get("jsonschema"))
		if parts[0] == "-" {
			continue
		}
		for _, p := range parts {
			if p != "" && p != "required" && p != "nullable" && !strings.Contains(p, "=") {
				return fmt.Errorf("%v.%s: jsonschema tag part %q is not keyword=value: a description with commas goes in a jsonschema_description tag, or escape each comma as \\,",
					t, f.Name, p)
			}
		}
		if err := checkTags(f.Type, seen); err != nil {
			return err
		}
	}
	return nil
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
