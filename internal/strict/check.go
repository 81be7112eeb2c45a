package strict

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/augceo/agent/schema"
)

// A Rule names one documented rule of a provider's structured-output mode.
type Rule string

// The rules the checkers implement. Which provider has which, and where it
// is documented, is listed in the package documentation.
const (
	RuleJSON                 Rule = "json"                  // the schema is JSON
	RuleSchemaObject         Rule = "schema-object"         // every (sub)schema is a JSON object
	RuleArrayItems           Rule = "array-items"           // an array schema has items
	RuleRootObject           Rule = "root-object"           // the root is an object schema
	RuleRootAnyOf            Rule = "root-anyof"            // the root is not an anyOf
	RuleTypeRequired         Rule = "type-required"         // a schema says what it is: type, enum, const, anyOf or $ref
	RuleType                 Rule = "type"                  // type names are supported ones
	RuleKeyword              Rule = "keyword"               // only supported keywords (fields)
	RuleValue                Rule = "value"                 // a keyword's value has the documented JSON type
	RuleFormat               Rule = "format"                // only supported string formats
	RuleAdditionalProperties Rule = "additional-properties" // every object has additionalProperties: false
	RuleRequiredAll          Rule = "required-all"          // every property is required
	RuleRequiredUnknown      Rule = "required-unknown"      // required names only properties
	RuleRef                  Rule = "ref"                   // $ref is local and resolves
	RuleRefSiblings          Rule = "ref-siblings"          // $ref stands alone
	RuleRecursion            Rule = "recursion"             // no recursive $ref
	RuleAllOfRef             Rule = "allof-ref"             // no $ref inside allOf
	RuleEnum                 Rule = "enum"                  // enum values of the supported types
	RuleMinItems             Rule = "min-items"             // minItems is 0 or 1
	RulePattern              Rule = "pattern"               // pattern within the supported regex subset
	RuleObjectProperties     Rule = "object-properties"     // an OBJECT has properties
	RulePropertyOrdering     Rule = "property-ordering"     // propertyOrdering names each property once
	RuleDepth                Rule = "nesting-depth"         // object nesting limit
	RulePropertyCount        Rule = "property-count"        // total properties limit
	RuleStringSize           Rule = "string-size"           // total size of names and values limit
	RuleEnumCount            Rule = "enum-count"            // total enum values limit
	RuleEnumSize             Rule = "enum-size"             // size of one large string enum
	RuleOptionalCount        Rule = "optional-parameters"   // optional properties limit
	RuleUnionCount           Rule = "union-parameters"      // union-typed properties limit
	RuleStrictTools          Rule = "strict-tools"          // strict tools per request limit
)

// A Violation is one broken rule at one place of a schema.
type Violation struct {
	Rule Rule
	// Pointer is the JSON pointer (RFC 6901) of the offending schema or
	// keyword in the checked schema; "" is the root.
	Pointer string
	// Detail says what is wrong, in the provider's terms.
	Detail string
}

func (v Violation) String() string {
	at := v.Pointer
	if at == "" {
		at = "the root"
	}
	return fmt.Sprintf("%s at %s: %s", v.Rule, at, v.Detail)
}

// Error is the answer of a checker that found the schema breaks its
// provider's rules: every violation, in document order.
type Error struct {
	Provider   string // "openai", "anthropic", "gemini" or "gemini-json"
	Violations []Violation
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "strict: %s rejects the schema:", e.Provider)
	for _, v := range e.Violations {
		b.WriteString("\n\t" + v.String())
	}
	return b.String()
}

// Has reports whether e has a violation of rule r at pointer ptr.
func (e *Error) Has(r Rule, ptr string) bool {
	return slices.ContainsFunc(e.Violations, func(v Violation) bool { return v.Rule == r && v.Pointer == ptr })
}

// Check checks s against the rules of dialect d's provider: [OpenAI],
// [Anthropic] or [Gemini] (responseSchema). It returns nil or an *Error.
func Check(d schema.Dialect, s json.RawMessage) error {
	switch d {
	case schema.OpenAI:
		return OpenAI(s)
	case schema.Anthropic:
		return Anthropic(s)
	case schema.Gemini:
		return Gemini(s)
	}
	return fmt.Errorf("strict: no strict rules for dialect %v", d)
}

// checker collects violations while walking a schema.
type checker struct {
	provider string
	root     any
	found    []Violation
}

func (c *checker) add(r Rule, ptr, format string, args ...any) {
	c.found = append(c.found, Violation{Rule: r, Pointer: ptr, Detail: fmt.Sprintf(format, args...)})
}

func (c *checker) err() error {
	if len(c.found) == 0 {
		return nil
	}
	return &Error{Provider: c.provider, Violations: c.found}
}

// start parses s; on failure it records a RuleJSON violation and returns
// false.
func (c *checker) start(s json.RawMessage) bool {
	root, err := parse(s)
	if err != nil {
		c.add(RuleJSON, "", "not JSON: %v", err)
		return false
	}
	c.root = root
	return true
}

// place is where a subschema sits, as the walk hands it to a visitor.
type place struct {
	ptr string
	// prop names the property this schema is the value of; "" elsewhere.
	prop string
	// parent is the object schema whose property this is, or nil.
	parent *object
	// depth counts the object schemas that enclose this one, from 0 at
	// the root; definitions count from the root too.
	depth int
}

// subschemaKeys are the keywords whose value is a schema, a list of
// schemas or a map of schemas; the walk descends into each.
var (
	schemaKeys  = []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems"}
	schemaLists = []string{"anyOf", "oneOf", "allOf", "prefixItems"}
	schemaMaps  = []string{"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"}
)

// walk calls visit on every subschema of the tree under s, in document
// order, parents first.
func walk(s any, at place, visit func(s any, at place)) {
	visit(s, at)
	o, ok := s.(*object)
	if !ok {
		return
	}
	depth := at.depth
	if isObjectSchema(o) {
		depth++
	}
	for i, k := range o.keys {
		v := o.vals[i]
		ptr := at.ptr + "/" + escape(k)
		switch {
		case slices.Contains(schemaKeys, k):
			if k == "items" {
				if list, ok := v.([]any); ok { // the old tuple form
					for j, e := range list {
						walk(e, place{ptr: ptr + "/" + strconv.Itoa(j), depth: depth}, visit)
					}
					continue
				}
			}
			if k == "additionalProperties" {
				if _, isBool := v.(bool); isBool {
					continue // false (or true) is the keyword's value, not a schema to check
				}
			}
			walk(v, place{ptr: ptr, depth: depth}, visit)
		case slices.Contains(schemaLists, k):
			list, _ := v.([]any)
			for j, e := range list {
				walk(e, place{ptr: ptr + "/" + strconv.Itoa(j), depth: depth}, visit)
			}
		case slices.Contains(schemaMaps, k):
			m, _ := v.(*object)
			if m == nil {
				continue
			}
			for j, name := range m.keys {
				p := place{ptr: ptr + "/" + escape(name), depth: depth}
				switch k {
				case "properties":
					p.prop, p.parent = name, o
				case "$defs", "definitions":
					p.depth = 0
				}
				walk(m.vals[j], p, visit)
			}
		}
	}
}

// isObjectSchema reports whether o describes objects: type object, or
// properties without a type.
func isObjectSchema(o *object) bool {
	if t, ok := o.get("type"); ok {
		names, _ := typeNames(t)
		return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, "object") })
	}
	return o.has("properties")
}

// checkClosed checks that an object schema sets additionalProperties to
// false (OpenAI and Anthropic).
func (c *checker) checkClosed(o *object, ptr string) {
	if !isObjectSchema(o) {
		return
	}
	ap, ok := o.get("additionalProperties")
	switch {
	case !ok:
		c.add(RuleAdditionalProperties, ptr, "'additionalProperties' is required to be supplied and to be false")
	case ap != false:
		c.add(RuleAdditionalProperties, ptr+"/additionalProperties", "'additionalProperties' must be false, not %s", describe(ap))
	}
}

// checkKeywords reports every keyword of o that allowed lacks.
func (c *checker) checkKeywords(o *object, ptr string, allowed []string, what string) {
	for _, k := range o.keys {
		if !slices.Contains(allowed, k) {
			c.add(RuleKeyword, ptr+"/"+escape(k), "%q %s", k, what)
		}
	}
}

// checkRef checks that a $ref is a local pointer that resolves.
func (c *checker) checkRef(o *object, ptr string) {
	v, ok := o.get("$ref")
	if !ok {
		return
	}
	ref, isString := v.(string)
	switch {
	case !isString:
		c.add(RuleRef, ptr+"/$ref", "$ref must be a string, not %s", kind(v))
	case !strings.HasPrefix(ref, "#"):
		c.add(RuleRef, ptr+"/$ref", "$ref %q is not a local reference (#...)", ref)
	default:
		if _, found := lookup(c.root, ref[1:]); !found {
			c.add(RuleRef, ptr+"/$ref", "$ref %q points nowhere", ref)
		}
	}
}

// refTargets returns the local targets of the $refs under s.
func refTargets(s any) []string {
	var out []string
	walk(s, place{}, func(s any, _ place) {
		if o, ok := s.(*object); ok {
			if r, ok := o.get("$ref"); ok {
				if ref, ok := r.(string); ok && strings.HasPrefix(ref, "#") {
					out = append(out, ref[1:])
				}
			}
		}
	})
	return out
}

// recursive returns the local ref targets that can reach themselves.
func recursive(root any) []string {
	var cyclic []string
	for _, start := range refTargets(root) {
		if slices.Contains(cyclic, start) {
			continue
		}
		seen := map[string]bool{}
		stack := []string{start}
		for len(stack) > 0 {
			t := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			target, ok := lookup(root, t)
			if !ok {
				continue
			}
			for _, next := range refTargets(target) {
				if next == start || strings.HasPrefix(start, next+"/") {
					cyclic = append(cyclic, start)
					stack = nil
					break
				}
				if !seen[next] {
					seen[next] = true
					stack = append(stack, next)
				}
			}
		}
	}
	return cyclic
}

// jsonTypes are the type names of JSON Schema.
var jsonTypes = []string{"string", "number", "integer", "boolean", "object", "array", "null"}

// checkTypes checks that o's type names are among names.
func (c *checker) checkTypes(o *object, ptr string, names []string) {
	t, ok := o.get("type")
	if !ok {
		return
	}
	list, ok := typeNames(t)
	if !ok {
		c.add(RuleType, ptr+"/type", "type must be a type name or a list of them, not %s", describe(t))
		return
	}
	for _, n := range list {
		if !slices.Contains(names, n) {
			c.add(RuleType, ptr+"/type", "type %q is not supported", n)
		}
	}
}

// hasType reports whether o's type names include name.
func hasType(o *object, name string) bool {
	t, _ := o.get("type")
	names, _ := typeNames(t)
	return slices.Contains(names, name)
}

// isUnion reports whether a schema is a union: an anyOf (oneOf), or a
// list of several types.
func isUnion(o *object) bool {
	if o.has("anyOf") || o.has("oneOf") {
		return true
	}
	t, _ := o.get("type")
	list, ok := t.([]any)
	return ok && len(list) > 1
}

// checkRequired checks o's required list: a list of names of properties;
// with all, every property is in it.
func (c *checker) checkRequired(o *object, ptr string, all bool) {
	props, _ := o.get("properties")
	po, _ := props.(*object)
	r, hasRequired := o.get("required")
	required, ok := stringList(r)
	if hasRequired && !ok {
		c.add(RuleValue, ptr+"/required", "required must be a list of property names")
		return
	}
	if po == nil {
		for _, n := range required {
			c.add(RuleRequiredUnknown, ptr+"/required", "required names %q, which is not a property", n)
		}
		return
	}
	for _, n := range required {
		if !po.has(n) {
			c.add(RuleRequiredUnknown, ptr+"/required", "extra required key %q supplied: it is not a property", n)
		}
	}
	if !all {
		return
	}
	for _, k := range po.keys {
		if !slices.Contains(required, k) {
			c.add(RuleRequiredAll, ptr, "'required' is required to be supplied and to be an array including every key in properties. Missing '%s'", k)
		}
	}
}

// counts are the sizes the documented limits bound.
type counts struct {
	properties int // property definitions in all objects
	optional   int // properties not listed in their object's required
	unions     int // properties whose schema is a union (anyOf or several types)
	enums      int // enum values in all enums
	strings    int // characters of property names, definition names, enum and const string values
}

// measure counts the sizes of the schema under root.
func measure(root any) counts {
	var n counts
	walk(root, place{}, func(s any, at place) {
		o, ok := s.(*object)
		if !ok {
			return
		}
		if at.parent != nil {
			n.properties++
			n.strings += len(at.prop)
			req, _ := at.parent.get("required")
			names, _ := stringList(req)
			if !slices.Contains(names, at.prop) {
				n.optional++
			}
			if isUnion(o) {
				n.unions++
			}
		}
		for _, k := range []string{"$defs", "definitions"} {
			if d, ok := o.get(k); ok {
				if do, ok := d.(*object); ok {
					for _, name := range do.keys {
						n.strings += len(name)
					}
				}
			}
		}
		if e, ok := o.get("enum"); ok {
			list, _ := e.([]any)
			n.enums += len(list)
			for _, v := range list {
				if s, ok := v.(string); ok {
					n.strings += len(s)
				}
			}
		}
		if v, ok := o.get("const"); ok {
			if s, ok := v.(string); ok {
				n.strings += len(s)
			}
		}
	})
	return n
}
