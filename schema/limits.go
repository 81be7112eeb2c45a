package schema

import (
	"errors"
	"fmt"
	"slices"
)

// The sizes OpenAI documents for the schemas of strict structured outputs
// ("Supported schemas": nesting depth and size, total string size, enum
// size).
const (
	OpenAIMaxDepth          = 10     // object schemas enclosing an object schema
	OpenAIMaxProperties     = 5000   // properties in all
	OpenAIMaxStringSize     = 120000 // characters of property, definition, enum and const names
	OpenAIMaxEnumValues     = 1000   // enum values in all
	OpenAILargeEnum         = 250    // a string enum with more values than this ...
	OpenAIMaxLargeEnumChars = 15000  // ... may hold this many characters
)

// The sizes Anthropic documents for the strict schemas of one request
// (structured outputs, "Schema complexity limits").
const (
	AnthropicMaxOptional = 24 // properties not required, in all
	AnthropicMaxUnions   = 16 // properties with anyOf or a type list, in all
)

// A LimitError says that an adapted schema is beyond what its provider's
// strict mode accepts: a size, or a form strict mode has no room for (a
// map, whose additionalProperties is not false; a recursive ref for
// Anthropic), counted as a limit of 0. Provider adapters then send the
// schema without strict mode; the answer is validated locally either way.
type LimitError struct {
	Dialect Dialect
	Limit   string // what was counted, e.g. "optional properties"
	Count   int
	Max     int
	At      string // the JSON pointer of the schema over a limit of its own; empty for totals
}

func (e *LimitError) Error() string {
	at := ""
	if e.At != "" {
		at = " at " + e.At
	}
	return fmt.Sprintf("schema: %v strict mode takes at most %d %s, the schema has %d%s", e.Dialect, e.Max, e.Limit, e.Count, at)
}

// checkLimits returns the first limit of dialect d that the adapted tree
// is over, or nil. Gemini documents no numbers, only that a schema can be
// too complex, which its error then says.
func checkLimits(tree any, d Dialect) *LimitError {
	if d != OpenAI && d != Anthropic {
		return nil
	}
	var n sizes
	var over *LimitError
	n.walk(tree, 0, nil, "", "", func(o *object, depth int, ptr string) {
		if over != nil {
			return
		}
		if isMap(o) && isObjectSchema(o) {
			// Strict mode wants every object closed; a map asks for keys
			// by design, and closing it would leave the model only {}.
			over = &LimitError{d, "maps (additionalProperties other than false)", 1, 0, ptr}
			return
		}
		if d != OpenAI {
			return
		}
		if isObjectSchema(o) && depth > OpenAIMaxDepth {
			over = &LimitError{d, "levels of nested objects", depth, OpenAIMaxDepth, ptr}
			return
		}
		e, _ := o.get("enum")
		list, _ := e.([]any)
		strs, chars := 0, 0
		for _, v := range list {
			if s, ok := v.(string); ok {
				strs++
				chars += len(s)
			}
		}
		if strs > OpenAILargeEnum && chars > OpenAIMaxLargeEnumChars {
			over = &LimitError{d, "characters in an enum of more than 250 strings", chars, OpenAIMaxLargeEnumChars, ptr + "/enum"}
		}
	})
	if over != nil {
		return over
	}
	for _, l := range n.limits(d) {
		if l.Count > l.Max {
			return &l
		}
	}
	return nil
}

// sizes are the totals the providers limit.
type sizes struct {
	properties, optional, unions, enums, strings int
}

func (n *sizes) limits(d Dialect) []LimitError {
	if d == Anthropic {
		return []LimitError{
			{d, "optional properties", n.optional, AnthropicMaxOptional, ""},
			{d, "properties with union types", n.unions, AnthropicMaxUnions, ""},
		}
	}
	return []LimitError{
		{d, "properties", n.properties, OpenAIMaxProperties, ""},
		{d, "characters of property names, definition names, enum and const values", n.strings, OpenAIMaxStringSize, ""},
		{d, "enum values", n.enums, OpenAIMaxEnumValues, ""},
	}
}

// walk counts the schema v, whose parent is the object schema parent
// when v is its property prop, and calls visit on each schema object.
// depth is the number of object schemas enclosing v; definitions start
// again from 0, as each is a root of its own.
func (n *sizes) walk(v any, depth int, parent *object, prop, ptr string, visit func(*object, int, string)) {
	o, ok := v.(*object)
	if !ok {
		return
	}
	visit(o, depth, ptr)
	if parent != nil {
		n.properties++
		n.strings += len(prop)
		req, _ := parent.get("required")
		if list, _ := req.([]any); !slices.Contains(list, any(prop)) {
			n.optional++
		}
		if o.has("anyOf") || o.has("oneOf") {
			n.unions++
		} else if t, _ := o.get("type"); len(asList(t)) > 1 {
			n.unions++
		}
	}
	if e, ok := o.get("enum"); ok {
		list := asList(e)
		n.enums += len(list)
		for _, v := range list {
			if s, ok := v.(string); ok {
				n.strings += len(s)
			}
		}
	}
	if s, ok := o.get("const"); ok {
		if s, ok := s.(string); ok {
			n.strings += len(s)
		}
	}
	inner := depth
	if isObjectSchema(o) {
		inner++
	}
	for _, m := range o.members {
		p := ptr + "/" + escapeToken(m.key)
		switch {
		case slices.Contains(schemaKeywords, m.key):
			if list, ok := m.val.([]any); ok {
				for i, e := range list { // draft-07 tuple items
					n.walk(e, inner, nil, "", fmt.Sprintf("%s/%d", p, i), visit)
				}
				continue
			}
			n.walk(m.val, inner, nil, "", p, visit)
		case slices.Contains(schemaListKeywords, m.key):
			for i, e := range asList(m.val) {
				n.walk(e, inner, nil, "", fmt.Sprintf("%s/%d", p, i), visit)
			}
		case slices.Contains(schemaMapKeywords, m.key):
			mo, _ := m.val.(*object)
			if mo == nil {
				continue
			}
			for _, sm := range mo.members {
				sp := p + "/" + escapeToken(sm.key)
				switch m.key {
				case "properties":
					n.walk(sm.val, inner, o, sm.key, sp, visit)
				case "$defs", "definitions":
					n.strings += len(sm.key)
					n.walk(sm.val, 0, nil, "", sp, visit)
				default:
					n.walk(sm.val, inner, nil, "", sp, visit)
				}
			}
		}
	}
}

// asList returns v as a list, or nil when it is not one.
func asList(v any) []any {
	list, _ := v.([]any)
	return list
}

// recursive reports whether a bundled tree (its refs all local) has a ref
// that leads back to itself.
func recursive(tree any) bool {
	in := &inliner{memo: map[string]any{}}
	_, err := in.inline(tree, tree, "", nil)
	return errors.Is(err, ErrRecursive)
}
