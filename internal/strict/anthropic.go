package strict

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Anthropic's documented limits of structured outputs, per request and
// across all its strict schemas (the output format and strict tools).
const (
	AnthropicMaxStrictTools = 20
	AnthropicMaxOptional    = 24
	AnthropicMaxUnions      = 16
)

var (
	// anthropicKeywords are the keywords Claude's structured outputs
	// document as supported, and the annotations.
	anthropicKeywords = []string{"type", "description", "title", "default", "properties", "required",
		"additionalProperties", "items", "enum", "const", "anyOf", "allOf", "$ref", "$defs",
		"definitions", "pattern", "format", "minItems"}
	// anthropicFormats are the string formats it documents.
	anthropicFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)

// Anthropic checks s against Claude's structured outputs
// (output_config.format json_schema, and tools with strict: true). The
// per-request limits are checked for s alone; [AnthropicRequest] checks
// them across all the strict schemas of a request. See the package
// documentation for the rules. It returns nil or an *Error.
func Anthropic(s json.RawMessage) error {
	return AnthropicRequest(s)
}

// AnthropicRequest checks the strict schemas of one request: each on its
// own, and the limits on strict tools, optional parameters and union-typed
// parameters across all of them. The first is the output format's schema
// when the request has one; the pointers of violations in the others are
// prefixed with /<index>.
func AnthropicRequest(schemas ...json.RawMessage) error {
	c := &checker{provider: "anthropic"}
	var total counts
	for i, s := range schemas {
		one := &checker{provider: "anthropic"}
		if one.start(s) {
			one.anthropic()
			total.add(measure(one.root))
		}
		for _, v := range one.found {
			if len(schemas) > 1 {
				v.Pointer = "/" + strconv.Itoa(i) + v.Pointer
			}
			c.found = append(c.found, v)
		}
	}
	if total.optional > AnthropicMaxOptional {
		c.add(RuleOptionalCount, "", "schemas contain too many optional parameters (%d): the limit is %d", total.optional, AnthropicMaxOptional)
	}
	if total.unions > AnthropicMaxUnions {
		c.add(RuleUnionCount, "", "schemas contain too many parameters with union types (%d): the limit is %d", total.unions, AnthropicMaxUnions)
	}
	return c.err()
}

func (n *counts) add(m counts) {
	n.properties += m.properties
	n.optional += m.optional
	n.unions += m.unions
	n.enums += m.enums
	n.strings += m.strings
}

// anthropic checks c.root on its own.
func (c *checker) anthropic() {
	if root, ok := c.root.(*object); ok && !hasType(root, "object") {
		t, _ := root.get("type")
		c.add(RuleRootObject, "", "the root schema must be of type object, not %s", describe(t))
	}
	for _, t := range recursive(c.root) {
		c.add(RuleRecursion, t, "recursive schemas are not supported")
	}
	walk(c.root, place{}, func(s any, at place) {
		o, ok := s.(*object)
		if !ok {
			c.add(RuleSchemaObject, at.ptr, "a schema must be a JSON object, not %s", describe(s))
			return
		}
		c.checkKeywords(o, at.ptr, anthropicKeywords, "is not supported")
		c.checkTypes(o, at.ptr, jsonTypes)
		if f, ok := o.get("format"); ok {
			if s, _ := f.(string); !slices.Contains(anthropicFormats, s) {
				c.add(RuleFormat, at.ptr+"/format", "format %s is not supported", describe(f))
			}
		}
		if e, ok := o.get("enum"); ok {
			list, isList := e.([]any)
			if !isList {
				c.add(RuleValue, at.ptr+"/enum", "enum must be a list, not %s", kind(e))
			}
			for _, v := range list {
				if k := kind(v); k == "object" || k == "array" {
					c.add(RuleEnum, at.ptr+"/enum", "enum values must be strings, numbers, booleans or null, not %s", k)
					break
				}
			}
		}
		if m, ok := o.get("minItems"); ok {
			if n, _ := m.(json.Number); n != "0" && n != "1" {
				c.add(RuleMinItems, at.ptr+"/minItems", "minItems must be 0 or 1, not %s", describe(m))
			}
		}
		if p, ok := o.get("pattern"); ok {
			if s, isString := p.(string); !isString {
				c.add(RuleValue, at.ptr+"/pattern", "pattern must be a string")
			} else if bad := unsupportedRegex(s); bad != "" {
				c.add(RulePattern, at.ptr+"/pattern", "pattern %q uses %s, which is not supported", s, bad)
			}
		}
		if a, ok := o.get("allOf"); ok {
			list, _ := a.([]any)
			for _, b := range list {
				if bo, ok := b.(*object); ok && bo.has("$ref") {
					c.add(RuleAllOfRef, at.ptr+"/allOf", "allOf with $ref is not supported")
					break
				}
			}
		}
		c.checkRef(o, at.ptr)
		if isObjectSchema(o) {
			c.checkClosed(o, at.ptr)
		}
	})
}

// unsupportedRegex returns the first construct of a pattern that
// Anthropic's regex subset lacks (backreferences, lookahead, lookbehind,
// word boundaries), or "".
func unsupportedRegex(p string) string {
	class := false
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; {
		case ch == '\\' && i+1 < len(p):
			next := p[i+1]
			i++
			switch {
			case class:
			case next >= '1' && next <= '9', next == 'k' && i+1 < len(p) && p[i+1] == '<':
				return "a backreference"
			case next == 'b' || next == 'B':
				return "a word boundary"
			}
		case class:
			if ch == ']' {
				class = false
			}
		case ch == '[':
			class = true
		case ch == '(' && strings.HasPrefix(p[i:], "(?="), ch == '(' && strings.HasPrefix(p[i:], "(?!"):
			return "a lookahead"
		case ch == '(' && strings.HasPrefix(p[i:], "(?<="), ch == '(' && strings.HasPrefix(p[i:], "(?<!"):
			return "a lookbehind"
		}
	}
	return ""
}
