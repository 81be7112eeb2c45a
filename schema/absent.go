package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// maxAbsentRounds bounds how often DropAbsent validates: each round drops
// the nulls the schema as written refuses, which can uncover more below
// an anyOf that failed on them first.
const maxAbsentRounds = 8

// DropAbsent returns data, which s accepts, without the nulls that stand
// for absent properties. A schema compiled for [OpenAI] (see
// [Registry.CompileFor]) lets an optional property be null, as strict mode
// makes the model write null for a property it leaves out; whoever reads
// the value (a tool's code, a Go type's decoder) expects the schema as
// written, which may refuse that null. DropAbsent removes exactly the
// object members whose null the schema as written refuses, at any depth,
// and keeps the order and bytes of the rest.
//
// data comes back as it is when s was compiled for another dialect, when
// it holds no such null, and when removing them would not make it valid
// for the schema as written (see [Schema.Accept], which says so).
//
// The validation library decides which nulls go: they are the nulls at
// which the schema as written fails.
func (s *Schema) DropAbsent(data json.RawMessage) json.RawMessage {
	if s.written == nil || !bytes.Contains(data, []byte("null")) {
		return data
	}
	v, err := decode(data)
	if err != nil {
		return data
	}
	if _, n := numberOutOfRange(v); n != "" {
		return data // not a value s accepts
	}
	out, err := s.dropAbsent(data, v)
	if err != nil {
		return data
	}
	return out
}

// Accept validates data and returns it without the nulls that stand for
// absent properties (see [Schema.DropAbsent]), decoding it once. For a
// schema compiled for [OpenAI], what counts is the value those nulls
// stand for: data is valid when the schema as written accepts it once they
// are gone. So a rule on which properties are present (a "required" under
// "then", "dependentRequired", a "oneOf" of "required" lists) is kept,
// which a null taken for a value would meet or break: data that s refuses
// may be valid, and data s accepts may not be. The error is the schema as
// written's, for data without its absent nulls. For other schemas, Accept
// is Validate.
func (s *Schema) Accept(data json.RawMessage) (json.RawMessage, error) {
	v, err := decode(data)
	if err != nil {
		return nil, err
	}
	if at, n := numberOutOfRange(v); n != "" {
		return nil, rangeError(at, n) // what the library must not see
	}
	relaxedErr := s.validateInRange(v)
	if s.written == nil || !bytes.Contains(data, []byte("null")) {
		if relaxedErr != nil {
			return nil, relaxedErr
		}
		return data, nil
	}
	// The error too is the schema as written's, on the value without its
	// absent nulls: the relaxed schema takes them for present, and would
	// tell a model that left out both of "id or name" that it gave both.
	// But a null the relaxed schema refuses is a required property's, no
	// absence: that error says it where it is.
	if relaxedErr != nil && blamesNull(relaxedErr, v) {
		return nil, relaxedErr
	}
	return s.dropAbsent(data, v)
}

// blamesNull reports whether err fails at a null member of v.
func blamesNull(err error, v any) bool {
	ve, ok := errors.AsType[*ValidationError](err)
	if !ok {
		return false
	}
	if len(ve.Causes) == 0 {
		if ve.InstancePath == "" {
			return false
		}
		return isNullMember(v, tokens(ve.InstancePath))
	}
	for _, c := range ve.Causes {
		if blamesNull(c, v) {
			return true
		}
	}
	return false
}

// dropAbsent is DropAbsent of data, decoded as v, which it changes. It
// returns the error of the schema as written for data without the nulls
// that schema refuses, when it refuses that too.
func (s *Schema) dropAbsent(data json.RawMessage, v any) (json.RawMessage, error) {
	if s.written.fast != nil && s.written.fast.accepts(v) {
		return data, nil // its nulls are all values (an output not given yet)
	}
	var dropped []refused
	triedInTheWay := false
	for round := 0; ; round++ {
		err := s.written.lib.Validate(v)
		if err == nil {
			break
		}
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, err
		}
		found := refusedNulls(ve, v, false, nil)
		if len(found) == 0 && !triedInTheWay && presenceOnly(ve) {
			triedInTheWay = true
			found = s.nullsInTheWay(data, v, dropped)
		}
		if len(found) == 0 || round == maxAbsentRounds {
			return nil, fromLibrary(ve)
		}
		for _, r := range found {
			if deleteMember(v, r.path) {
				dropped = append(dropped, r)
			}
		}
	}
	// A null refused only by an alternative of an anyOf or a oneOf may be
	// one the alternative that matches takes: it stays if the value is
	// still valid with it.
	for i := 0; i < len(dropped); i++ {
		if dropped[i].certain {
			continue
		}
		without := slices.Delete(slices.Clone(dropped), i, i+1)
		if s.written.lib.Validate(withoutMembers(data, without)) == nil {
			dropped = without
			i--
		}
	}
	out := data
	for _, r := range dropped {
		out = dropMember(out, r.path)
	}
	return out, nil
}

// maxInTheWay bounds the nulls nullsInTheWay tries one by one.
const maxInTheWay = 64

// nullsInTheWay returns the null members of v, which the schema as
// written refuses though no failure is at a null, without which it takes
// v: all of them, or else the first one. Such a null is one the schema
// takes as a value where a rule on which properties are present (a
// "dependentRequired" on it, a "not" of "required") says the property
// must be absent, which a strict model, writing every property, cannot
// say otherwise. They come back uncertain, so that dropAbsent keeps those
// the value does not need gone.
//
// v is data decoded without the nulls already dropped.
func (s *Schema) nullsInTheWay(data []byte, v any, dropped []refused) []refused {
	all := nullMembers(v, nil, nil)
	if len(all) == 0 {
		return nil
	}
	without := func(nulls []refused) any {
		return withoutMembers(data, append(slices.Clip(dropped), nulls...))
	}
	if s.written.lib.Validate(without(all)) == nil {
		return all
	}
	for _, r := range all[:min(len(all), maxInTheWay)] {
		if s.written.lib.Validate(without([]refused{r})) == nil {
			return []refused{r}
		}
	}
	return nil
}

// presenceOnly reports whether every failure in e is of a rule on which
// properties are present, which a null taken for a value may break: one
// of the others (two equal items under "uniqueItems", say) is no reason
// to read a null as absent.
func presenceOnly(e *jsonschema.ValidationError) bool {
	if len(e.Causes) == 0 {
		switch e.ErrorKind.(type) {
		case *kind.Required, *kind.DependentRequired, *kind.Dependency, *kind.MaxProperties, *kind.Not, *kind.OneOf, *kind.FalseSchema:
			return true
		}
		return false
	}
	for _, c := range e.Causes {
		if !presenceOnly(c) {
			return false
		}
	}
	return true
}

// nullMembers appends to found the null members of the objects in v.
func nullMembers(v any, path []string, found []refused) []refused {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := append(path[:len(path):len(path)], k)
			if x[k] == nil {
				found = append(found, refused{path: p})
			} else {
				found = nullMembers(x[k], p, found)
			}
		}
	case []any:
		for i, e := range x {
			found = nullMembers(e, append(path[:len(path):len(path)], strconv.Itoa(i)), found)
		}
	}
	return found
}

// refused is a null member that the schema as written refuses: certain
// when it fails outside any alternative of an anyOf or a oneOf.
type refused struct {
	path    []string
	certain bool
}

// withoutMembers decodes data, which is valid JSON, without the members
// of dropped.
func withoutMembers(data []byte, dropped []refused) any {
	v := jsonfast.Decode(data)
	for _, r := range dropped {
		deleteMember(v, r.path)
	}
	return v
}

// refusedNulls returns the failures in e that are at a null member of an
// object of v. inAlt says e is within an alternative of an anyOf or a
// oneOf.
func refusedNulls(e *jsonschema.ValidationError, v any, inAlt bool, found []refused) []refused {
	if len(e.Causes) == 0 {
		if len(e.InstanceLocation) > 0 && isNullMember(v, e.InstanceLocation) {
			found = append(found, refused{path: e.InstanceLocation, certain: !inAlt})
		}
		return found
	}
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		inAlt = true
	}
	for _, c := range e.Causes {
		found = refusedNulls(c, v, inAlt, found)
	}
	return found
}

// isNullMember reports whether path leads to a null member of an object.
func isNullMember(v any, path []string) bool {
	_, ok := nullMemberOf(v, path)
	return ok
}

// nullMemberOf returns the object holding the null member path leads to.
func nullMemberOf(v any, path []string) (map[string]any, bool) {
	parent, _ := at(v, path[:len(path)-1])
	m, ok := parent.(map[string]any)
	if !ok {
		return nil, false
	}
	val, ok := m[path[len(path)-1]]
	return m, ok && val == nil
}

// deleteMember deletes the null member at path from v, reporting whether
// it was there (two failures may name the same one).
func deleteMember(v any, path []string) bool {
	m, ok := nullMemberOf(v, path)
	if ok {
		delete(m, path[len(path)-1])
	}
	return ok
}

// dropMember returns the JSON data without the object member at path,
// its other bytes as they were.
func dropMember(data []byte, path []string) []byte {
	data = bytes.TrimSpace(data)
	if len(path) == 0 || len(data) == 0 {
		return data
	}
	var out []byte
	switch data[0] {
	case '{':
		out = append(out, '{')
		jsonfast.RawMembers(data, func(k, val []byte) bool {
			key := jsonfast.Unquote(k)
			if key == path[0] {
				if len(path) == 1 {
					return true
				}
				val = dropMember(val, path[1:])
			}
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(append(append(out, k...), ':'), val...)
			return true
		})
		return append(out, '}')
	case '[':
		i, err := strconv.Atoi(path[0])
		if err != nil {
			return data
		}
		out = append(out, '[')
		n := 0
		jsonfast.Elements(data, func(val []byte) bool {
			if n == i {
				val = dropMember(val, path[1:])
			}
			if n > 0 {
				out = append(out, ',')
			}
			out = append(out, val...)
			n++
			return true
		})
		return append(out, ']')
	}
	return data
}
