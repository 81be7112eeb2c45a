package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// A Dialect is the JSON Schema subset that a provider's structured-output mode accepts.
// [Adapt] rewrites a schema into it; the provider is sent the adapted schema, while the
// answer is still validated locally against the original (see [Registry.CompileFor]), so
// every rule a dialect drops is still enforced, and the model is told about it in the
// description.
type Dialect int

const (
	// Full is JSON Schema 2020-12, for providers that accept all of it (and for JSON mode
	// plus local validation). Adapt only makes the schema self-contained: named refs are
	// bundled into "$defs", and "nullable" is translated. A schema with neither comes
	// back byte for byte.
	Full Dialect = iota
	// OpenAI is the strict mode of OpenAI structured outputs (response_format json_schema
	// with strict: true, and strict function tools).
	OpenAI
	// Anthropic is Claude's structured outputs (output_config.format and strict tools).
	Anthropic
	// Gemini is the OpenAPI 3.0 subset of Gemini's responseSchema.
	Gemini
)

// String returns the dialect's name: "full", "openai", "anthropic" or "gemini".
func (d Dialect) String() string {
	switch d {
	case Full:
		return "full"
	case OpenAI:
		return "openai"
	case Anthropic:
		return "anthropic"
	case Gemini:
		return "gemini"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// Adapt rewrites a self-contained schema into dialect d. See [Registry.Adapt].
//
// Adapt keeps the schemas it adapted last, by their bytes and dialect: a
// provider adapter adapts the composed schema of every request, and the
// steps of a run send the same one (a 10-tool schema takes about a
// millisecond to adapt). The result is a copy the caller owns.
func Adapt(s json.RawMessage, d Dialect) (json.RawMessage, error) {
	key := adaptKey{string(s), d}
	if out, ok := adapted.get(key); ok {
		return bytes.Clone(out), nil
	}
	out, err := (*Registry)(nil).Adapt(s, d)
	if err == nil {
		adapted.put(key, bytes.Clone(out))
	}
	return out, err
}

// adaptKey is what an adaptation depends on, with no registry to resolve
// names in.
type adaptKey struct {
	schema  string
	dialect Dialect
}

// adaptCacheSize bounds the adaptations Adapt keeps.
const adaptCacheSize = 64

// adaptCache holds recent adaptations; the oldest goes first.
type adaptCache struct {
	mu    sync.Mutex
	m     map[adaptKey]json.RawMessage
	order []adaptKey
}

var adapted adaptCache

func (c *adaptCache) get(k adaptKey) (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *adaptCache) put(k adaptKey, v json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[adaptKey]json.RawMessage{}
	}
	if _, ok := c.m[k]; ok {
		return
	}
	if len(c.order) == adaptCacheSize {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[k] = v
	c.order = append(c.order, k)
}

// Adapt rewrites the schema s into the subset that dialect d accepts, resolving named
// refs in r. It never changes the order of properties, which is the order the model
// writes them in. The rules, per dialect:
//
// All dialects: "nullable" becomes a type union (see the package documentation); named
// refs are bundled into the root's "$defs" ([Gemini]: every ref is inlined).
//
// [OpenAI]: the root must be an object; every object lists all its properties in
// "required", and an optional property becomes nullable (so the answer has null where
// the original omits the key: validate it with [Registry.CompileFor]); every object gets
// "additionalProperties": false; "oneOf" becomes "anyOf"; "allOf" is merged into its
// parent; keywords outside the documented subset (minLength, maxLength, uniqueItems,
// formats other than date-time, time, date, duration, email, hostname, ipv4, ipv6 and
// uuid, default, ...) are dropped.
//
// [Anthropic]: every object gets "additionalProperties": false; optional properties stay
// optional; "oneOf" becomes "anyOf", "allOf" is merged; numeric bounds, string lengths,
// maxItems, and minItems above 1 are dropped, as are formats outside date-time, time,
// date, duration, email, hostname, uri, ipv4, ipv6 and uuid; recursive refs are an error.
//
// [Gemini]: refs are inlined (recursion is an error) and "$defs" removed; type names are
// upper case; a type union with null becomes "nullable": true, and {"type":"null"}
// alternatives of an anyOf likewise; "const" becomes a one-value "enum"; "oneOf" becomes
// "anyOf", "allOf" is merged; "additionalProperties" is dropped; each object gets
// "propertyOrdering", without which Gemini writes properties in alphabetical order.
//
// Explicit "additionalProperties" other than false (a map) is [ErrUnsupported] for
// OpenAI and Anthropic: replacing it with false would leave the model only {}. A
// missing one is taken as the usual oversight and set to false. Dropped constraints are
// appended to the description, as "(minLength: 3, maximum: 10)", so the model still
// knows them.
func (r *Registry) Adapt(s json.RawMessage, d Dialect) (json.RawMessage, error) {
	if d < Full || d > Gemini {
		return nil, fmt.Errorf("%w: dialect %v", ErrUnsupported, d)
	}
	tree, err := parseTree(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	if _, ok := tree.(*object); !ok {
		if _, ok := tree.(bool); !ok || d != Full {
			return nil, fmt.Errorf("%w: %v needs an object schema", ErrUnsupported, d)
		}
	}
	changed := false
	tree, err = walk(tree, "", func(o *object, ptr string) (any, error) {
		changed = changed || o.has("nullable")
		return translateNullable(o, ptr)
	})
	if err != nil {
		return nil, err
	}
	if d == Gemini {
		in := &inliner{r: r, memo: map[string]any{}}
		tree, err = in.inline(tree, tree, "", nil)
	} else {
		b := &bundler{r: r, keys: map[string]string{}, taken: map[string]bool{}}
		tree, err = b.bundle(tree)
		changed = changed || len(b.defs) > 0
		if err == nil && d == Anthropic {
			in := &inliner{r: r, memo: map[string]any{}}
			_, err = in.inline(tree, tree, "", nil) // only to reject recursion
		}
	}
	if err != nil {
		return nil, err
	}
	switch d {
	case Full:
		if !changed {
			return bytes.Clone(s), nil
		}
	case OpenAI:
		if !isObjectSchema(tree.(*object)) {
			return nil, fmt.Errorf("%w: openai: the root schema must be an object", ErrUnsupported)
		}
		tree, err = walk(tree, "", openaiRules)
	case Anthropic:
		tree, err = walk(tree, "", anthropicRules)
	case Gemini:
		if tree, err = walk(tree, "", geminiRules); err == nil {
			_, err = walk(tree, "", geminiNull)
		}
	}
	if err != nil {
		return nil, err
	}
	return marshalTree(tree), nil
}

// bundler copies named schemas into the root's "$defs" and points their refs there.
type bundler struct {
	r     *Registry
	keys  map[string]string // name → key in $defs
	taken map[string]bool
	defs  []member
}

func (b *bundler) bundle(root any) (any, error) {
	o, ok := root.(*object)
	if !ok {
		return root, nil
	}
	if defs, ok := o.get("$defs"); ok {
		if do, ok := defs.(*object); ok {
			for _, m := range do.members {
				b.taken[m.key] = true
			}
		}
	}
	out, err := b.rewrite(o, "", "")
	if err != nil || len(b.defs) == 0 {
		return out, err
	}
	ro := out.(*object)
	defs := &object{}
	if d, ok := ro.get("$defs"); ok {
		if do, ok := d.(*object); ok {
			defs = do.clone()
		}
	}
	defs.members = append(defs.members, b.defs...)
	ro.set("$defs", defs)
	return ro, nil
}

// rewrite points the refs of a tree that will live at JSON pointer at (inside the
// bundle) to their bundled place. in names the schema the tree was registered as.
func (b *bundler) rewrite(tree any, at, in string) (any, error) {
	return walk(tree, "", func(o *object, ptr string) (any, error) {
		v, ok := o.get("$ref")
		ref, isString := v.(string)
		if !ok || !isString {
			return o, nil
		}
		if strings.HasPrefix(ref, "#") {
			if at != "" {
				o.set("$ref", "#"+at+ref[1:])
			}
			return o, nil
		}
		name, _, err := splitRef(ref)
		if err != nil {
			return nil, err
		}
		key, err := b.key(name, ref, ptr, in)
		if err != nil {
			return nil, err
		}
		_, frag, _ := strings.Cut(ref, "#")
		o.set("$ref", "#/$defs/"+escapeToken(key)+frag)
		return o, nil
	})
}

func (b *bundler) key(name, ref, ptr, in string) (string, error) {
	if k, ok := b.keys[name]; ok {
		return k, nil
	}
	e, err := b.r.entry(name)
	if err != nil {
		return "", unknownRef(ref, ptr+"/$ref", in)
	}
	k := name
	for i := 2; b.taken[k]; i++ {
		k = fmt.Sprintf("%s_%d", name, i)
	}
	b.keys[name], b.taken[k] = k, true
	idx := len(b.defs)
	b.defs = append(b.defs, member{key: k})
	t, err := b.rewrite(e.tree, "/$defs/"+escapeToken(k), name)
	if err != nil {
		return "", err
	}
	if to, ok := t.(*object); ok {
		to.del("$schema")
		to.del("$id")
	}
	b.defs[idx].val = t
	return k, nil
}

func unknownRef(ref, where, in string) error {
	if in != "" {
		return fmt.Errorf("%w %q at %s in %q", ErrUnknownRef, ref, where, in)
	}
	return fmt.Errorf("%w %q at %s", ErrUnknownRef, ref, where)
}

// inliner replaces every $ref by a copy of its target.
type inliner struct {
	r    *Registry
	memo map[string]any // target key → inlined target
}

// inline inlines the refs of tree, a part of doc (the schema registered as name, or the
// root when name is ""). stack holds the targets being inlined, to find recursion.
func (in *inliner) inline(tree, doc any, name string, stack []string) (any, error) {
	return walk(tree, "", func(o *object, ptr string) (any, error) {
		v, ok := o.get("$ref")
		ref, isString := v.(string)
		if !ok || !isString {
			return o, nil
		}
		refName, frag, err := splitRef(ref)
		if err != nil {
			return nil, err
		}
		targetDoc, targetName := doc, name
		if refName != "" {
			e, err := in.r.entry(refName)
			if err != nil {
				return nil, unknownRef(ref, ptr+"/$ref", name)
			}
			targetDoc, targetName = e.tree, refName
		}
		key := targetName + "#" + frag
		if slices.Contains(stack, key) {
			return nil, fmt.Errorf("%w: %q at %s", ErrRecursive, ref, ptr+"/$ref")
		}
		target, ok := in.memo[key]
		if !ok {
			raw, found := lookupPointer(targetDoc, frag)
			if !found {
				return nil, fmt.Errorf("%w: %q at %s points nowhere", ErrInvalidRef, ref, ptr+"/$ref")
			}
			if target, err = in.inline(raw, targetDoc, targetName, append(stack, key)); err != nil {
				return nil, err
			}
			in.memo[key] = target
		}
		return mergeRef(o, target, ptr)
	})
}

// mergeRef returns target with the keywords next to the $ref in o added. Annotations
// next to the ref win over the target's; any other keyword on both sides must agree.
func mergeRef(o *object, target any, ptr string) (any, error) {
	var res *object
	switch t := target.(type) {
	case *object:
		res = t.clone()
		res.del("$defs")
		res.del("definitions")
		res.del("$id")
		res.del("$schema")
	case bool:
		if !t {
			return nil, fmt.Errorf("%w: $ref at %s to a false schema", ErrUnsupported, ptr)
		}
		res = &object{}
	}
	for _, m := range o.members {
		if m.key == "$ref" {
			continue
		}
		if err := mergeKeyword(res, m, ptr); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func mergeKeyword(res *object, m member, ptr string) error {
	old, ok := res.get(m.key)
	switch {
	case !ok, slices.Contains(annotationKeywords, m.key):
		res.set(m.key, m.val)
	case m.key == "required", m.key == "propertyOrdering":
		res.set(m.key, unionList(old, m.val))
	case m.key == "properties":
		oldProps, ok1 := old.(*object)
		newProps, ok2 := m.val.(*object)
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: cannot merge %q at %s", ErrUnsupported, m.key, ptr)
		}
		merged := oldProps.clone()
		for _, p := range newProps.members {
			if prev, ok := merged.get(p.key); ok && !bytes.Equal(marshalTree(prev), marshalTree(p.val)) {
				return fmt.Errorf("%w: cannot merge property %q at %s", ErrUnsupported, p.key, ptr)
			}
			merged.set(p.key, p.val)
		}
		res.set(m.key, merged)
	case !bytes.Equal(marshalTree(old), marshalTree(m.val)):
		return fmt.Errorf("%w: cannot merge %q at %s", ErrUnsupported, m.key, ptr)
	}
	return nil
}

func unionList(a, b any) []any {
	out, _ := a.([]any)
	out = slices.Clone(out)
	bl, _ := b.([]any)
	for _, v := range bl {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// mergeAllOf folds the branches of an "allOf" into o: none of the strict dialects
// accepts it everywhere, and merging keeps its meaning when the branches don't clash.
func mergeAllOf(o *object, ptr string) error {
	v, ok := o.get("allOf")
	if !ok {
		return nil
	}
	o.del("allOf")
	list, _ := v.([]any)
	for i, b := range list {
		bo, ok := b.(*object)
		if !ok {
			if b == true {
				continue
			}
			return fmt.Errorf("%w: allOf at %s/allOf/%d", ErrUnsupported, ptr, i)
		}
		for _, m := range bo.members {
			if err := mergeKeyword(o, m, ptr); err != nil {
				return err
			}
		}
	}
	return nil
}

// oneOfToAnyOf: a value that matches exactly one alternative matches at least one, so
// anyOf only loosens, and local validation still checks oneOf.
func oneOfToAnyOf(o *object, ptr string) error {
	v, ok := o.get("oneOf")
	if !ok {
		return nil
	}
	if o.has("anyOf") {
		return fmt.Errorf("%w: both oneOf and anyOf at %s", ErrUnsupported, ptr)
	}
	o.del("oneOf")
	o.set("anyOf", v)
	return nil
}

func isObjectSchema(o *object) bool {
	return hasType(o, "object") || o.has("properties")
}

func hasType(o *object, t string) bool {
	switch v, _ := o.get("type"); v := v.(type) {
	case string:
		return v == t
	case []any:
		return slices.Contains(v, any(t))
	}
	return false
}

// closeObject sets "additionalProperties": false on an object schema, as OpenAI and
// Anthropic require, and rejects an explicit map (see Adapt).
func closeObject(o *object, ptr string, d Dialect) error {
	if !isObjectSchema(o) {
		return nil
	}
	ap, ok := o.get("additionalProperties")
	if ok && ap != false {
		return fmt.Errorf("%w: %v: additionalProperties other than false at %s", ErrUnsupported, d, ptr)
	}
	o.set("additionalProperties", false)
	return nil
}

// keep removes every keyword of o not in allowed. The dropped constraints listed in
// noted are described in the description instead.
func keep(o *object, allowed []string, notes ...string) {
	kept := o.members[:0:0]
	for _, m := range o.members {
		if slices.Contains(allowed, m.key) {
			kept = append(kept, m)
			continue
		}
		if slices.Contains(notedKeywords, m.key) {
			notes = append(notes, m.key+": "+string(marshalTree(m.val)))
		}
	}
	o.members = kept
	note(o, notes...)
}

// notedKeywords are the dropped keywords worth telling the model about: simple
// constraints and defaults it can respect by itself.
var notedKeywords = []string{"minLength", "maxLength", "pattern", "format", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems",
	"minProperties", "maxProperties", "default"}

func note(o *object, notes ...string) {
	if len(notes) == 0 {
		return
	}
	s := "(" + strings.Join(notes, ", ") + ")"
	if d, ok := o.get("description"); ok {
		if ds, ok := d.(string); ok && ds != "" {
			s = ds + " " + s
		}
	}
	o.set("description", s)
}

// keepFormat drops "format" unless the dialect supports its value, so that keep then
// notes it.
func keepFormat(allowed []string, o *object, supported []string) []string {
	if f, ok := o.get("format"); ok {
		if s, ok := f.(string); ok && slices.Contains(supported, s) {
			return allowed
		}
	}
	return slices.DeleteFunc(slices.Clone(allowed), func(k string) bool { return k == "format" })
}

// OpenAI documents this subset for strict mode ("Supported schemas" in the Structured
// Outputs guide): types string, number, boolean, integer, object, array, enum, anyOf;
// string pattern and format; number multipleOf, maximum, exclusiveMaximum, minimum,
// exclusiveMinimum; array minItems and maxItems; $defs and $ref, recursion included.
var (
	openaiKeywords = []string{"type", "description", "title", "properties", "required",
		"additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs", "definitions",
		"pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
		"exclusiveMinimum", "minItems", "maxItems"}
	openaiFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)

func openaiRules(o *object, ptr string) (any, error) {
	if err := mergeAllOf(o, ptr); err != nil {
		return nil, err
	}
	if err := oneOfToAnyOf(o, ptr); err != nil {
		return nil, err
	}
	keep(o, keepFormat(openaiKeywords, o, openaiFormats))
	if err := closeObject(o, ptr, OpenAI); err != nil {
		return nil, err
	}
	// Strict mode has no optional properties: each is required, and the optional ones
	// may be null instead of absent.
	if p, ok := o.get("properties"); ok {
		if props, ok := p.(*object); ok {
			required := stringList(o, "required")
			props = props.clone()
			all := make([]any, 0, len(props.members))
			for i, m := range props.members {
				all = append(all, m.key)
				if ps, ok := m.val.(*object); ok && !slices.Contains(required, m.key) {
					props.members[i].val = makeNullable(ps.clone())
				}
			}
			o.set("properties", props)
			o.set("required", all)
		}
	}
	return o, nil
}

// Anthropic documents, for structured outputs: all basic types; enum of primitives;
// const, anyOf, allOf (not with $ref); local $ref, $defs, definitions, but no recursion;
// required; additionalProperties, which must be false and is mandatory on objects;
// string formats date-time, time, date, duration, email, hostname, uri, ipv4, ipv6,
// uuid; simple patterns; minItems of 0 or 1. Numeric bounds, string lengths and other
// array bounds are not supported.
var (
	anthropicKeywords = []string{"type", "description", "title", "properties", "required",
		"additionalProperties", "items", "enum", "const", "anyOf", "$ref", "$defs", "definitions",
		"pattern", "format", "minItems"}
	anthropicFormats = []string{"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)

func anthropicRules(o *object, ptr string) (any, error) {
	if err := mergeAllOf(o, ptr); err != nil {
		return nil, err
	}
	if err := oneOfToAnyOf(o, ptr); err != nil {
		return nil, err
	}
	var notes []string
	if v, ok := o.get("minItems"); ok {
		if n, ok := v.(json.Number); !ok || (n != "0" && n != "1") {
			notes = append(notes, "minItems: "+string(marshalTree(v)))
			o.set("minItems", json.Number("1")) // a weaker bound it accepts
		}
	}
	if e, ok := o.get("enum"); ok {
		if list, _ := e.([]any); !primitives(list) {
			o.del("enum") // enums of objects or arrays are not accepted: loosen
		}
	}
	keep(o, keepFormat(anthropicKeywords, o, anthropicFormats), notes...)
	if err := closeObject(o, ptr, Anthropic); err != nil {
		return nil, err
	}
	return o, nil
}

func primitives(list []any) bool {
	for _, v := range list {
		switch v.(type) {
		case *object, []any:
			return false
		}
	}
	return true
}

// Gemini's responseSchema is "a select subset of an OpenAPI 3.0 schema object": type (one
// name, upper case in the API's enum), format, title, description, nullable, enum (of
// strings), items, minItems, maxItems, properties, required, minProperties,
// maxProperties, minLength, maxLength, pattern, minimum, maximum, anyOf and
// propertyOrdering. No $ref, const, oneOf, allOf, type unions or additionalProperties.
var (
	geminiKeywords = []string{"type", "format", "title", "description", "nullable", "enum",
		"items", "minItems", "maxItems", "properties", "required", "minProperties",
		"maxProperties", "minLength", "maxLength", "pattern", "minimum", "maximum", "anyOf",
		"propertyOrdering"}
	geminiFormats = []string{"date-time", "enum", "float", "double", "int32", "int64"}
)

// typeOfValues returns the JSON Schema type all of list has, or "".
func typeOfValues(list []any) string {
	t := ""
	for _, v := range list {
		var vt string
		switch v := v.(type) {
		case json.Number:
			vt = "number"
			if !strings.ContainsAny(string(v), ".eE") {
				vt = "integer"
			}
		case bool:
			vt = "boolean"
		default:
			return ""
		}
		switch {
		case t == "" || t == vt:
			t = vt
		case t == "integer" && vt == "number" || t == "number" && vt == "integer":
			t = "number"
		default:
			return ""
		}
	}
	return t
}

// geminiNull rejects a null type left outside an anyOf: Gemini has no way to say it.
func geminiNull(o *object, ptr string) (any, error) {
	if t, _ := o.get("type"); t == "null" {
		return nil, fmt.Errorf("%w: gemini: type null alone at %s", ErrUnsupported, ptr)
	}
	return o, nil
}

func geminiRules(o *object, ptr string) (any, error) {
	if err := mergeAllOf(o, ptr); err != nil {
		return nil, err
	}
	if err := oneOfToAnyOf(o, ptr); err != nil {
		return nil, err
	}
	if c, ok := o.get("const"); ok { // no const: a one-value enum says the same
		o.del("const")
		o.set("enum", []any{c})
	}
	nullable := false
	if e, ok := o.get("enum"); ok {
		list, _ := e.([]any)
		if slices.Contains(list, nil) {
			nullable = true
			list = slices.DeleteFunc(slices.Clone(list), func(v any) bool { return v == nil })
		}
		strs := true
		for _, v := range list {
			_, isString := v.(string)
			strs = strs && isString
		}
		if strs {
			o.set("enum", list)
			if !o.has("type") {
				o.set("type", "string")
			}
		} else { // enum values are strings in the API: describe the others instead
			o.del("enum")
			note(o, "one of: "+string(marshalTree(list)))
			if !o.has("type") {
				if t := typeOfValues(list); t != "" {
					o.set("type", t)
				}
			}
		}
	}
	if t, ok := o.get("type"); ok { // no type unions: null becomes nullable, others anyOf
		list, isList := t.([]any)
		if !isList {
			list = []any{t}
		}
		if slices.Contains(list, any("null")) {
			nullable = true
			list = slices.DeleteFunc(slices.Clone(list), func(v any) bool { return v == "null" })
		}
		switch len(list) {
		case 0: // {"type":"null"}: its parent anyOf turns it into nullable, see geminiNull
			o.set("type", "null")
			return o, nil
		case 1:
			o.set("type", list[0])
		default:
			if o.has("anyOf") {
				return nil, fmt.Errorf("%w: gemini: type union and anyOf at %s", ErrUnsupported, ptr)
			}
			o.del("type")
			alts := make([]any, len(list))
			for i, t := range list {
				ts, _ := t.(string)
				alts[i] = &object{members: []member{{"type", strings.ToUpper(ts)}}}
			}
			o.set("anyOf", alts)
		}
	}
	if a, ok := o.get("anyOf"); ok { // {"type":"null"} alternatives become nullable
		list, _ := a.([]any)
		list = slices.DeleteFunc(slices.Clone(list), func(v any) bool {
			if alt, ok := v.(*object); ok && len(alt.members) == 1 && alt.members[0].key == "type" &&
				(alt.members[0].val == "null" || alt.members[0].val == "NULL") {
				nullable = true
				return true
			}
			return false
		})
		o.set("anyOf", list)
		if len(list) == 1 {
			if only, ok := list[0].(*object); ok {
				o.del("anyOf")
				hoisted := only.clone()
				for _, m := range o.members {
					if err := mergeKeyword(hoisted, m, ptr); err != nil {
						return nil, err
					}
				}
				o = hoisted
			}
		}
	}
	if nullable {
		o.set("nullable", true)
	}
	if t, ok := o.get("type"); ok {
		if s, ok := t.(string); ok {
			o.set("type", strings.ToUpper(s))
		}
	}
	if t, _ := o.get("type"); t == "OBJECT" {
		// Gemini rejects an OBJECT whose properties are missing or empty
		// (a free-form object, or one with additionalProperties only).
		if p, ok := o.get("properties"); !ok || p == nil || len(p.(*object).members) == 0 {
			return nil, fmt.Errorf("%w: gemini: object with no properties at %s", ErrUnsupported, ptr)
		}
	}
	if p, ok := o.get("properties"); ok {
		if props, ok := p.(*object); ok {
			order := make([]any, len(props.members))
			for i, m := range props.members {
				order[i] = m.key
			}
			o.set("propertyOrdering", order)
		}
	}
	keep(o, keepFormat(geminiKeywords, o, geminiFormats))
	return o, nil
}
