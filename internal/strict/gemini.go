package strict

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

var (
	// geminiFields are the fields of the API's Schema message, which
	// responseSchema is: any other is "Unknown name ... Cannot find field".
	geminiFields = []string{"type", "format", "title", "description", "nullable", "enum",
		"maxItems", "minItems", "properties", "required", "minProperties", "maxProperties",
		"minLength", "maxLength", "pattern", "example", "anyOf", "propertyOrdering", "default",
		"items", "minimum", "maximum"}
	// geminiTypes are the names of the Type enum.
	geminiTypes = []string{"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
	// geminiFormats are the formats the Schema documents for the numeric
	// types; STRING takes "enum", "date-time" and others.
	geminiFormats = map[string][]string{"NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}}
	// geminiCounts are the fields that are int64 in the API.
	geminiCounts = []string{"maxItems", "minItems", "minProperties", "maxProperties", "minLength", "maxLength"}
	// geminiJSONKeywords are the JSON Schema keywords responseJsonSchema
	// documents as supported.
	geminiJSONKeywords = []string{"$id", "$defs", "$ref", "$anchor", "type", "format", "title",
		"description", "enum", "items", "prefixItems", "minItems", "maxItems", "minimum", "maximum",
		"anyOf", "oneOf", "properties", "additionalProperties", "required", "propertyOrdering"}
)

// Gemini checks s against the Schema of Gemini's
// generationConfig.responseSchema, "a select subset of an OpenAPI 3.0
// schema object". See the package documentation for the rules. It returns
// nil or an *Error.
func Gemini(s json.RawMessage) error {
	c := &checker{provider: "gemini"}
	if !c.start(s) {
		return c.err()
	}
	c.gemini(c.root, "")
	return c.err()
}

// gemini checks the Schema message v at ptr and the schemas in it. The
// walk is its own: responseSchema has no $defs, and its fields are only
// those of the message.
func (c *checker) gemini(v any, ptr string) {
	o, ok := v.(*object)
	if !ok {
		c.add(RuleSchemaObject, ptr, "a Schema must be a JSON object, not %s", describe(v))
		return
	}
	for i, k := range o.keys {
		if !slices.Contains(geminiFields, k) {
			c.add(RuleKeyword, ptr+"/"+escape(k), "unknown name %q: cannot find field", k)
			continue
		}
		val, at := o.vals[i], ptr+"/"+escape(k)
		switch k {
		case "type":
			s, isString := val.(string)
			switch {
			case !isString && kind(val) == "array":
				c.add(RuleType, at, "type is not repeating: a list of types cannot be given")
			case !isString || !slices.Contains(geminiTypes, s):
				c.add(RuleType, at, "invalid value %s for the enum Type", describe(val))
			}
		case "enum":
			if _, ok := stringList(val); !ok {
				c.add(RuleEnum, at, "enum values must be strings: %s", describe(val))
			}
		case "required", "propertyOrdering":
			if _, ok := stringList(val); !ok {
				c.add(RuleValue, at, "%s must be a list of property names, not %s", k, describe(val))
			}
		case "nullable":
			if _, ok := val.(bool); !ok {
				c.add(RuleValue, at, "nullable must be a boolean")
			}
		case "format", "title", "description", "pattern":
			if _, ok := val.(string); !ok {
				c.add(RuleValue, at, "%s must be a string", k)
			}
		case "minimum", "maximum":
			if _, ok := val.(json.Number); !ok {
				c.add(RuleValue, at, "%s must be a number", k)
			}
		case "items":
			c.gemini(val, at)
		case "anyOf":
			list, ok := val.([]any)
			if !ok {
				c.add(RuleValue, at, "anyOf must be a list of Schemas")
			}
			for j, e := range list {
				c.gemini(e, at+"/"+strconv.Itoa(j))
			}
		case "properties":
			props, ok := val.(*object)
			if !ok {
				c.add(RuleValue, at, "properties must be a map of Schemas")
				continue
			}
			for j, name := range props.keys {
				c.gemini(props.vals[j], at+"/"+escape(name))
			}
		}
		if slices.Contains(geminiCounts, k) && !isCount(val) {
			c.add(RuleValue, at, "%s must be a non-negative integer", k)
		}
	}
	t, _ := o.get("type")
	typ, _ := t.(string)
	if f, ok := o.get("format"); ok {
		if allowed, restricted := geminiFormats[typ]; restricted && !slices.Contains(allowed, describeString(f)) {
			c.add(RuleFormat, ptr+"/format", "format %s is not supported for %s", describe(f), typ)
		}
	}
	props, _ := o.get("properties")
	po, _ := props.(*object)
	if typ == "OBJECT" && (po == nil || len(po.keys) == 0) {
		c.add(RuleObjectProperties, ptr+"/properties", "should be non-empty for OBJECT type")
	}
	if r, ok := o.get("required"); ok {
		names, _ := stringList(r)
		for _, n := range names {
			if po == nil || !po.has(n) {
				c.add(RuleRequiredUnknown, ptr+"/required", "required property %q is not defined", n)
			}
		}
	}
	if p, ok := o.get("propertyOrdering"); ok {
		names, _ := stringList(p)
		for j, n := range names {
			if po == nil || !po.has(n) || slices.Index(names, n) != j {
				c.add(RulePropertyOrdering, ptr+"/propertyOrdering", "propertyOrdering must name each property once: %q", n)
			}
		}
	}
}

// GeminiJSON checks s against what Gemini documents for
// generationConfig.responseJsonSchema: the JSON Schema keywords it
// supports (others are not enforced), $ref alone but for $-keywords, and
// recursion only through properties that are not required. It returns nil
// or an *Error.
func GeminiJSON(s json.RawMessage) error {
	c := &checker{provider: "gemini-json"}
	if !c.start(s) {
		return c.err()
	}
	cyclic := recursive(c.root)
	walk(c.root, place{}, func(s any, at place) {
		o, ok := s.(*object)
		if !ok {
			if _, isBool := s.(bool); !isBool {
				c.add(RuleSchemaObject, at.ptr, "a schema must be a JSON object or a boolean, not %s", describe(s))
			}
			return
		}
		c.checkKeywords(o, at.ptr, geminiJSONKeywords, "is not supported by responseJsonSchema")
		c.checkTypes(o, at.ptr, jsonTypes)
		if e, ok := o.get("enum"); ok {
			list, _ := e.([]any)
			for _, v := range list {
				if k := kind(v); k != "string" && k != "number" {
					c.add(RuleEnum, at.ptr+"/enum", "enum values must be strings or numbers, not %s", k)
					break
				}
			}
		}
		c.checkRef(o, at.ptr)
		if r, ok := o.get("$ref"); ok {
			for _, k := range o.keys {
				if !strings.HasPrefix(k, "$") {
					c.add(RuleRefSiblings, at.ptr+"/"+escape(k), "with $ref set, no other property but $-properties may be set")
				}
			}
			ref, _ := r.(string)
			if at.parent != nil && strings.HasPrefix(ref, "#") && slices.Contains(cyclic, ref[1:]) {
				req, _ := at.parent.get("required")
				names, _ := stringList(req)
				if slices.Contains(names, at.prop) {
					c.add(RuleRecursion, at.ptr+"/$ref", "a cyclic reference may only be used within a property that is not required")
				}
			}
		}
	})
	return c.err()
}

// isCount reports whether v is a non-negative integer, as a number or, as
// the API writes int64, a string.
func isCount(v any) bool {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = string(v)
	case string:
		s = v
	default:
		return false
	}
	if s == "" {
		return false
	}
	for _, ch := range s {
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}

func describeString(v any) string {
	s, _ := v.(string)
	return s
}
