package strict

import (
	"encoding/json"
	"slices"
	"strconv"
)

// OpenAI's documented limits of strict structured outputs ("Supported
// schemas", "Objects have limitations on nesting depth and size" and
// "Limitations on total string size" and "on enum size").
const (
	OpenAIMaxProperties     = 5000
	OpenAIMaxDepth          = 10
	OpenAIMaxStringSize     = 120000
	OpenAIMaxEnumValues     = 1000
	OpenAILargeEnum         = 250   // a string enum with more values than this ...
	OpenAIMaxLargeEnumChars = 15000 // ... may hold this many characters in all
)

var (
	// openaiKeywords are the keywords OpenAI documents as supported in
	// strict mode, and the annotations it accepts.
	openaiKeywords = []string{"type", "description", "title", "properties", "required",
		"additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs", "definitions",
		"pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
		"exclusiveMinimum", "minItems", "maxItems"}
	// openaiFormats are the string formats it documents.
	openaiFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)

// OpenAI checks s against OpenAI's strict structured outputs (response_format
// json_schema with strict: true, and strict function tools). See the
// package documentation for the rules. It returns nil or an *Error.
func OpenAI(s json.RawMessage) error {
	c := &checker{provider: "openai"}
	if !c.start(s) {
		return c.err()
	}
	if root, ok := c.root.(*object); ok {
		if root.has("anyOf") {
			c.add(RuleRootAnyOf, "", "the root schema must not be anyOf")
		}
		if t, _ := root.get("type"); t != "object" {
			c.add(RuleRootObject, "", "the root schema must be of type object, not %s", describe(t))
		}
	}
	walk(c.root, place{}, func(s any, at place) {
		o, ok := s.(*object)
		if !ok {
			c.add(RuleSchemaObject, at.ptr, "a schema must be a JSON object, not %s", describe(s))
			return
		}
		c.checkKeywords(o, at.ptr, openaiKeywords, "is not permitted")
		c.checkTypes(o, at.ptr, jsonTypes)
		if !o.has("type") && !o.has("enum") && !o.has("const") && !o.has("anyOf") && !o.has("$ref") {
			c.add(RuleTypeRequired, at.ptr, "schema must have a 'type' key")
		}
		if f, ok := o.get("format"); ok {
			if s, _ := f.(string); !slices.Contains(openaiFormats, s) {
				c.add(RuleFormat, at.ptr+"/format", "format %s is not supported", describe(f))
			}
		}
		if e, ok := o.get("enum"); ok {
			c.checkEnumList(e, at.ptr)
		}
		if a, ok := o.get("anyOf"); ok {
			if list, ok := a.([]any); !ok || len(list) == 0 {
				c.add(RuleValue, at.ptr+"/anyOf", "anyOf must be a non-empty list of schemas")
			}
		}
		if it, ok := o.get("items"); ok {
			if _, ok := it.(*object); !ok {
				c.add(RuleSchemaObject, at.ptr+"/items", "items must be one schema")
			}
		} else if hasType(o, "array") {
			c.add(RuleArrayItems, at.ptr, "array schema missing items")
		}
		c.checkRef(o, at.ptr)
		if o.has("$ref") && len(o.keys) > 1 {
			c.add(RuleRefSiblings, at.ptr, "$ref cannot be combined with other keywords")
		}
		if isObjectSchema(o) {
			c.checkClosed(o, at.ptr)
			c.checkRequired(o, at.ptr, true)
			if at.depth > OpenAIMaxDepth {
				c.add(RuleDepth, at.ptr, "objects nest %d levels deep, more than %d", at.depth, OpenAIMaxDepth)
			}
		}
	})
	n := measure(c.root)
	if n.properties > OpenAIMaxProperties {
		c.add(RulePropertyCount, "", "%d object properties in all, more than %d", n.properties, OpenAIMaxProperties)
	}
	if n.strings > OpenAIMaxStringSize {
		c.add(RuleStringSize, "", "property names, definition names, enum and const values total %d characters, more than %d", n.strings, OpenAIMaxStringSize)
	}
	if n.enums > OpenAIMaxEnumValues {
		c.add(RuleEnumCount, "", "%d enum values in all, more than %d", n.enums, OpenAIMaxEnumValues)
	}
	return c.err()
}

// checkEnumList checks an enum's value (a list) and the size rule of a
// large string enum.
func (c *checker) checkEnumList(e any, ptr string) {
	list, ok := e.([]any)
	if !ok {
		c.add(RuleValue, ptr+"/enum", "enum must be a list, not %s", kind(e))
		return
	}
	strs, chars := 0, 0
	for _, v := range list {
		if s, ok := v.(string); ok {
			strs++
			chars += len(s)
		}
	}
	if strs > OpenAILargeEnum && chars > OpenAIMaxLargeEnumChars {
		c.add(RuleEnumSize, ptr+"/enum", "an enum of %s string values totals %d characters, more than %d", strconv.Itoa(strs), chars, OpenAIMaxLargeEnumChars)
	}
}
