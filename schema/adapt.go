package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
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
	// GeminiJSON is the JSON Schema subset of Gemini's responseJsonSchema
	// (Gemini 2.5 and later), which can say what responseSchema cannot: refs,
	// recursion, maps and free-form objects.
	GeminiJSON
)

// String returns the dialect's name: "full", "openai", "anthropic", "gemini" or
// "gemini-json".
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
	case GeminiJSON:
		return "gemini-json"
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
	out, _, err := AdaptStrict(s, d)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(out), nil
}

// AdaptStrict is [Adapt] for a provider adapter that sends the schema in
// strict mode: over is nil when strict mode takes the adapted schema, or
// says what it does not take: a size it exceeds (too many optional
// properties for Anthropic, too deep for OpenAI, ...), a map, or, for
// Anthropic, a recursive ref. The adapted schema is valid without strict
// mode either way, so the adapter can still send it with strict mode off,
// and the answer is validated locally.
//
// The adapted schema is compact JSON in a string, which no one can
// change: a run's steps get the one the cache holds, and an adapter
// writes it into the request body as it is, without a copy of its own.
func AdaptStrict(s json.RawMessage, d Dialect) (adapted string, over *LimitError, err error) {
	if d < Full || d > GeminiJSON {
		_, err := (*Registry)(nil).Adapt(s, d) // says which
		return "", nil, err
	}
	if e, ok := cache.get(s, d); ok {
		return e.out, e.over, e.err
	}
	out, err := (*Registry)(nil).Adapt(s, d)
	if err != nil {
		// Kept too: the Gemini adapter tries its subset first at every
		// request, and falls back to GeminiJSON when this fails.
		cache.put(s, d, adaptation{err: err})
		return "", nil, err
	}
	e := adaptation{out: string(out)}
	if d == OpenAI || d == Anthropic {
		tree, err := parseTree(out)
		if err != nil {
			return "", nil, fmt.Errorf("%w: adapted: %w", ErrInvalidJSON, err)
		}
		e.over = checkLimits(tree, d)
		if e.over == nil && d == Anthropic && recursive(tree) {
			e.over = &LimitError{d, "recursive references", 1, 0, ""}
		}
	}
	cache.put(s, d, e)
	return e.out, e.over, nil
}

// adaptation is a cached result of AdaptStrict: a schema adapted, or
// the error that adapting it gave, which depends on nothing else.
type adaptation struct {
	out  string
	over *LimitError
	err  error
}

// adaptCacheSize bounds the adaptations Adapt keeps.
const adaptCacheSize = 64

// adaptCache holds recent adaptations, by dialect and then by the
// schema's bytes, so that a lookup does not copy them; the oldest goes
// first.
type adaptCache struct {
	mu    sync.Mutex
	m     [GeminiJSON + 1]map[string]adaptation
	order []cacheKey
}

type cacheKey struct {
	d Dialect
	s string
}

var cache adaptCache

func (c *adaptCache) get(s json.RawMessage, d Dialect) (adaptation, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[d][string(s)]
	return e, ok
}

func (c *adaptCache) put(s json.RawMessage, d Dialect, e adaptation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[d] == nil {
		c.m[d] = map[string]adaptation{}
	}
	if _, ok := c.m[d][string(s)]; ok {
		return
	}
	if len(c.order) == adaptCacheSize {
		delete(c.m[c.order[0].d], c.order[0].s)
		c.order = c.order[1:]
	}
	k := cacheKey{d, string(s)}
	c.m[d][k.s] = e
	c.order = append(c.order, k)
}

// Adapt rewrites the schema s into the subset that dialect d accepts, resolving named
// refs in r. It never changes the order of properties, which is the order the model
// writes them in. What a dialect cannot say is loosened, so that the model can still
// write what the original allows, except where strict mode cannot let it (free-form
// objects, below); the answer is validated locally against the original (see
// [Registry.CompileFor]), which decides. The rules, per dialect:
//
// All dialects: "nullable" becomes a type union (see the package documentation); named
// refs are bundled into the root's "$defs" ([Gemini]: every ref is inlined).
//
// [OpenAI]: the root must be an object; every object lists all its properties in
// "required", and an optional property becomes nullable (so the answer has null where
// the original omits the key: validate it with [Registry.CompileFor]); a definition
// that only optional properties refer to, twice or more, is made nullable itself
// instead of each of them; every object gets
// "additionalProperties": false, and "properties" even when it has none, which the API
// requires; "oneOf" becomes "anyOf"; "allOf" is merged into its parent; keywords outside
// the documented subset (minLength, maxLength, uniqueItems, formats other than
// date-time, time, date, duration, email, hostname, ipv4, ipv6 and uuid, default, ...)
// are dropped. Every schema must say what it is and a $ref must stand alone, so:
//   - a schema with properties and no type gets "type": "object";
//   - a free-form value ({}, true, or a schema left with no type, enum, const, anyOf,
//     $ref or properties once the unsupported keywords are dropped) becomes {"$ref":
//     "#/$defs/JSONValue"}, added to the root's "$defs" (under another name if that one
//     is taken): any JSON value strict mode can write, a string, number, boolean, null,
//     {} or an array of these values, arrays nested to any depth;
//   - an array without "items" gets that same JSONValue as its items;
//   - a $ref with siblings becomes {"anyOf":[{"$ref":...}], <the siblings>}.
//
// A free-form object, {"type":"object"} with no properties (and the object a JSONValue
// allows), can only be the empty object {} in strict mode, which has no way to let the
// model write keys the schema does not name. It stays the closed empty object, and its
// description says that only {} can be written there, so that a model offered another
// alternative (a reference, say) takes that one. Other shapes would say more but answer
// something else: an object written as a string of JSON, or as a list of key/value
// pairs, is not what the original accepts, and the answer would have to be converted
// back before it is validated. A request that needs free-form objects filled in belongs
// in a non-strict mode (JSON mode with the original schema). An explicit
// "additionalProperties" other than false (a map) stays, since the schema then asks for
// keys by design: strict mode refuses it, which [AdaptStrict] reports as a limit, so the
// adapter sends the schema without strict mode.
//
// [Anthropic]: every object gets "additionalProperties": false, and a free-form object
// says in its description that only {} can be written, as for OpenAI; optional
// properties stay optional; "oneOf" becomes "anyOf", "allOf" is merged; numeric bounds,
// string lengths, maxItems, and minItems above 1 are dropped, as are formats outside
// date-time, time, date, duration, email, hostname, uri, ipv4, ipv6 and uuid, and
// patterns that use what its regular expressions lack (lookahead, lookbehind,
// backreferences, \b and \B). An explicit map and recursive refs stay: strict mode
// refuses them, which [AdaptStrict] reports as a limit, so the adapter sends the schema
// without strict mode.
//
// [Gemini]: refs are inlined (recursion is an error) and "$defs" removed; type names are
// upper case; a type union with null becomes "nullable": true, and {"type":"null"}
// alternatives of an anyOf likewise; "const" becomes a one-value "enum"; an enum of
// values other than strings (the API's enum holds strings) is described instead, and
// the schema gets the type of its values: a const array such as ["input"] becomes an
// ARRAY of the type of its elements (with an enum of them when they are strings) and
// their count as minItems and maxItems; "oneOf" becomes "anyOf", "allOf" is merged;
// "additionalProperties" is dropped; a format is kept only where the API documents it
// (float and double for NUMBER, int32 and int64 for INTEGER, date-time and enum for
// STRING); each object gets "propertyOrdering", without which Gemini writes properties
// in alphabetical order. An object with no properties is [ErrUnsupported]: the API
// rejects it; [GeminiJSON] can say it.
//
// [GeminiJSON]: the keywords responseJsonSchema documents are kept: $id, $defs, $ref,
// $anchor, type, format, title, description, enum, items, prefixItems, minItems,
// maxItems, minimum, maximum, anyOf, oneOf, properties, additionalProperties, required
// and propertyOrdering. No object gets a propertyOrdering: the models that take
// responseJsonSchema (Gemini 2.5 and later) write properties in the order of the
// schema's keys, which the adapted schema keeps. "allOf" is merged,
// "definitions" become "$defs"; "const" becomes a one-value "enum", and an enum keeps
// its strings and numbers while null becomes a {"type":"null"} alternative and other
// values are described, the schema getting their type as for [Gemini]. A $ref with
// siblings becomes {"anyOf":[{"$ref":...}], <the siblings>}. The API unrolls a cyclic
// ref only in a property that is not required: a required property that refers to a
// recursive definition gets a copy of it instead (one level unrolled), and one inside
// the recursion is no longer required, its description saying it is.
//
// Dropped constraints are appended to the description, as "(minLength: 3, maximum: 10)",
// so the model still knows them. A missing "additionalProperties" on an object with
// properties is taken as the usual oversight and set to false where a dialect requires
// it. An "anyOf" or "oneOf" beside an object's properties whose alternatives only refine
// that object ("either id or name" as lists of required properties, a discriminator's
// cases) goes to the description too, but for [GeminiJSON], a property only a case names
// joining the object's: closed as every object is, such alternatives refused every value.
func (r *Registry) Adapt(s json.RawMessage, d Dialect) (json.RawMessage, error) {
	if d < Full || d > GeminiJSON {
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
	}
	if err != nil {
		return nil, err
	}
	if d != Full { // none of the strict dialects takes allOf everywhere, or boolean schemas
		root, _ := tree.(*object)
		var noted []string // refs that descriptions still name
		tree, err = walk(tree, "", func(o *object, ptr string) (any, error) {
			replaceBooleans(o)
			if err := mergeAllOf(o, ptr); err != nil {
				return nil, err
			}
			if d != GeminiJSON && root != nil {
				noted = append(noted, dropRefinements(o, root)...)
			}
			return o, nil
		})
		if err != nil {
			return nil, err
		}
		if root, ok := tree.(*object); ok {
			dropUnusedDefs(root, noted)
		}
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
		tree, err = adaptOpenAI(tree.(*object))
	case Anthropic:
		tree, err = walk(tree, "", anthropicRules)
	case Gemini:
		if tree, err = walk(tree, "", geminiRules); err == nil {
			_, err = walk(tree, "", geminiNull)
		}
	case GeminiJSON:
		tree, err = adaptGeminiJSON(tree.(*object))
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
// A local ref to an $anchor becomes a ref to its JSON pointer, which stays
// true where the bundle moves the tree and where a dialect drops $anchor
// (a named ref takes only a pointer; see splitRef).
func (b *bundler) rewrite(tree any, at, in string) (any, error) {
	local := anchorPointers(tree)
	return walk(tree, "", func(o *object, ptr string) (any, error) {
		v, ok := o.get("$ref")
		ref, isString := v.(string)
		if !ok || !isString {
			return o, nil
		}
		if frag, ok := strings.CutPrefix(ref, "#"); ok {
			if p, ok := local[frag]; ok {
				frag = p
			}
			if at != "" || frag != ref[1:] {
				o.set("$ref", "#"+at+frag)
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

// anchorPointers maps each $anchor of tree to its JSON pointer, escaped
// for a URI fragment.
func anchorPointers(tree any) map[string]string {
	var out map[string]string
	_, _ = walk(tree, "", func(o *object, ptr string) (any, error) {
		if a, ok := o.get("$anchor"); ok {
			if name, ok := a.(string); ok && name != "" {
				if out == nil {
					out = map[string]string{}
				}
				out[name] = (&url.URL{Fragment: ptr}).EscapedFragment()
			}
		}
		return o, nil
	})
	return out
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
	r         *Registry
	memo      map[string]any // target key → inlined target
	localOnly bool           // leave named refs as they are
}

// InlineLocal returns s with each local ref ("#/$defs/x", any JSON pointer
// into s) replaced by the schema it points to, and without s's own "$defs"
// and "definitions", which nothing refers to then. Refs to registered
// schemas ("City") stay. It is for a schema that will be embedded in
// another, where "#" no longer means its root, such as a tool's definition
// in a composed schema. A recursive ref cannot be inlined: ErrRecursive.
func InlineLocal(s json.RawMessage) (json.RawMessage, error) {
	tree, err := parseTree(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	body := tree // the schema without its definitions, which only refs use
	if o, ok := tree.(*object); ok {
		o = o.clone()
		o.del("$defs")
		o.del("definitions")
		body = o
	}
	in := &inliner{memo: map[string]any{}, localOnly: true}
	out, err := in.inline(body, tree, "", nil)
	if err != nil {
		return nil, err
	}
	return marshalTree(out), nil
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
		if refName != "" && in.localOnly {
			return o, nil
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

// dropRefinements takes out of an object schema with properties each anyOf
// or oneOf whose alternatives only refine that object (which properties
// are present, what a discriminator holds, the properties of each case),
// and notes it in the description; a property only a case names joins the
// object's, optional. OpenAI and Anthropic close every object,
// alternatives included, so an alternative that names fewer properties
// than the object has would refuse every value; OpenAI's strict mode has
// every property written anyway; and Gemini's responseSchema keeps of a
// list of required properties an empty schema. Only GeminiJSON says them
// as they are. The answer is validated against the schema as written,
// which keeps them. root resolves a local $ref to an alternative, and the
// note says the alternative it points to, so that the definition need not
// be sent; dropRefinements returns the local refs the notes still name.
func dropRefinements(o, root *object) (noted []string) {
	kws, joined := caseProperties(o, root)
	if len(kws) == 0 {
		return nil
	}
	p, _ := o.get("properties")
	props := p.(*object).clone()
	for _, j := range joined {
		props.set(j.key, j.decls[0])
	}
	o.set("properties", props)
	for _, k := range kws {
		v, _ := o.get(k)
		o.del(k)
		list := v.([]any)
		cases := make([]any, len(list))
		for i, alt := range list {
			cases[i] = refinement(alt, root)
		}
		noted = append(noted, localRefs(cases...)...)
		note(o, k+": "+string(marshalTree(cases)))
	}
	return noted
}

// localRefs returns the targets (JSON pointers) of the local refs in the
// schemas of list.
func localRefs(list ...any) []string {
	var out []string
	for _, s := range list {
		_, _ = walk(s, "", func(o *object, _ string) (any, error) {
			if r, ok := o.get("$ref"); ok {
				if ref, ok := r.(string); ok && strings.HasPrefix(ref, "#") {
					out = append(out, ref[1:])
				}
			}
			return o, nil
		})
	}
	return out
}

// dropUnusedDefs deletes from root's $defs the definitions that no ref
// reaches from outside $defs, nor from noted (refs that descriptions
// name): the model would pay tokens to read them for nothing. A refinement
// moved to a description leaves its alternatives' definitions so.
func dropUnusedDefs(root *object, noted []string) {
	d, _ := root.get("$defs")
	defs, ok := d.(*object)
	if !ok {
		return
	}
	rest := root.clone()
	rest.del("$defs")
	queue := append(localRefs(rest), noted...)
	used := map[string]bool{}
	for ; len(queue) > 0; queue = queue[1:] {
		ptr, err := url.PathUnescape(queue[0]) // a fragment is URI-encoded
		if err != nil || ptr != "" && !strings.HasPrefix(ptr, "/") {
			return // an anchor, which may be in any definition, or a bad escape
		}
		key, ok := strings.CutPrefix(ptr, "/$defs/")
		if !ok {
			continue // a ref into the rest of the tree, walked already
		}
		key, _, _ = strings.Cut(key, "/")
		key = unescapeToken(key)
		if used[key] {
			continue
		}
		used[key] = true
		if def, ok := defs.get(key); ok {
			queue = append(queue, localRefs(def)...)
		}
	}
	if len(used) == len(defs.members) {
		return
	}
	kept := &object{}
	for _, m := range defs.members {
		if used[m.key] {
			kept.set(m.key, m.val)
		}
	}
	if len(kept.members) == 0 {
		root.del("$defs")
	} else {
		root.set("$defs", kept)
	}
}

// caseProperty is a property that only cases of an object's anyOf or
// oneOf name, with what each case naming it declares, in order: Adapt
// offers the first.
type caseProperty struct {
	key   string
	decls []any
}

// caseProperties returns the keywords of o, an object schema with
// properties, that are an anyOf or a oneOf whose alternatives only refine
// it (see dropRefinements), and the properties that only those cases
// name.
func caseProperties(o, root *object) (kws []string, joined []caseProperty) {
	p, _ := o.get("properties")
	props, ok := p.(*object)
	if !ok {
		return nil, nil
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		v, _ := o.get(k)
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			continue
		}
		cases := make([]*object, 0, len(list))
		for _, alt := range list {
			if c := refinement(alt, root); c != nil {
				cases = append(cases, c)
			}
		}
		if len(cases) < len(list) {
			continue // a union of types: the value is one or another
		}
		kws = append(kws, k)
		for _, c := range cases {
			cp, _ := c.get("properties")
			co, ok := cp.(*object)
			if !ok {
				continue
			}
			for _, m := range co.members {
				if props.has(m.key) {
					continue
				}
				i := slices.IndexFunc(joined, func(j caseProperty) bool { return j.key == m.key })
				if i < 0 {
					i = len(joined)
					joined = append(joined, caseProperty{key: m.key})
				}
				joined[i].decls = append(joined[i].decls, m.val)
			}
		}
	}
	return kws, joined
}

// refinement returns alt, an alternative of an object schema's anyOf or
// oneOf, when it says more of that object rather than another type, a
// local $ref followed; else nil.
func refinement(alt any, root *object) *object {
	a, ok := alt.(*object)
	if !ok {
		return nil
	}
	if r, ok := a.get("$ref"); ok {
		s, _ := r.(string)
		key, local := strings.CutPrefix(s, "#/$defs/")
		d, _ := root.get("$defs")
		defs, _ := d.(*object)
		if len(a.members) != 1 || !local || defs == nil {
			return nil
		}
		t, _ := defs.get(unescapeToken(key))
		if a, ok = t.(*object); !ok || a.has("$ref") {
			return nil
		}
	}
	t, typed := a.get("type")
	if typed && t != "object" {
		return nil
	}
	return a
}

// mergeAllOf folds the branches of an "allOf" into o: none of the strict dialects
// accepts it everywhere, and merging keeps its meaning when the branches don't clash.
// Adapt merges before it applies a dialect's rules, so that what the rules add to a
// schema (a type, a closed object) is never merged as if the branch had said it.
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

// replaceBooleans replaces the boolean schemas among o's subschemas, which the strict
// dialects do not take, by what they mean: true by {}, the schema of any value; a
// property whose schema is false cannot be there, an alternative that is false is none,
// items false allow only the empty array, and a prefixItems entry false is loosened to
// {}. The other places of a boolean schema (not, if, contains, ...) are dropped by every
// dialect anyway.
func replaceBooleans(o *object) {
	anything := func() *object { return &object{} }
	switch it, _ := o.get("items"); it {
	case true:
		o.del("items")
	case false:
		o.del("items")
		o.set("maxItems", json.Number("0"))
	}
	if p, ok := o.get("properties"); ok {
		if props, ok := p.(*object); ok {
			props = props.clone()
			props.members = slices.DeleteFunc(props.members, func(m member) bool { return m.val == false })
			for i, m := range props.members {
				if m.val == true {
					props.members[i].val = anything()
				}
			}
			o.set("properties", props)
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "prefixItems"} {
		v, _ := o.get(k)
		list, ok := v.([]any)
		if !ok || !slices.ContainsFunc(list, func(s any) bool { _, b := s.(bool); return b }) {
			continue
		}
		out := make([]any, 0, len(list))
		for _, s := range list {
			switch {
			case s == true, s == false && k == "prefixItems": // no element there: loosened
				out = append(out, anything())
			case s == false: // an alternative that matches nothing
			default:
				out = append(out, s)
			}
		}
		if len(out) > 0 {
			o.set(k, out)
		}
	}
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
// Anthropic require. An explicit map keeps its additionalProperties, which strict mode
// refuses: [AdaptStrict] reports it as a limit (see Adapt).
func closeObject(o *object) {
	if !isObjectSchema(o) || isMap(o) {
		return
	}
	o.set("additionalProperties", false)
}

// isMap reports whether o says additionalProperties other than false: a map.
func isMap(o *object) bool {
	ap, ok := o.get("additionalProperties")
	return ok && ap != false
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

func adaptOpenAI(root *object) (any, error) {
	key := freeDefsKey(root, jsonValueName)
	a := &openaiAdapter{ref: "#/$defs/" + escapeToken(key)}
	tree, err := walk(root, "", a.rules)
	if err != nil {
		return nil, err
	}
	ro := tree.(*object) // the root is an object schema, which rules keeps an object
	if ro, err = nullableDefs(ro); err != nil || !a.used {
		return ro, err
	}
	defs := &object{}
	if d, ok := ro.get("$defs"); ok {
		if do, ok := d.(*object); ok {
			defs = do.clone()
		}
	}
	defs.set(key, a.jsonValue())
	ro.set("$defs", defs)
	return ro, nil
}

// nullableDefs makes nullable each definition that the schema refers to (twice or
// more) only as {"anyOf":[{"$ref":<it>},{"type":"null"}]}, as strict mode spells an
// optional property, and refers to it with its bare $ref there: the same schema, with
// the null alternative written once rather than at every use. A composed schema's
// tools all refer so to the meta-properties' definitions (_outputPath and the
// others), three times a tool.
func nullableDefs(ro *object) (*object, error) {
	d, _ := ro.get("$defs")
	defs, ok := d.(*object)
	if !ok {
		return ro, nil
	}
	refs := map[string]int{}    // the $refs to each definition
	wrapped := map[string]int{} // of them, those in a null wrapper
	into := map[string]bool{}   // definitions a $ref points into
	escaped := false            // whether a $ref is percent-encoded, which this does not decode
	_, err := walk(ro, "", func(o *object, _ string) (any, error) {
		if r, ok := o.get("$ref"); ok {
			if s, ok := r.(string); ok {
				name, rest, _ := strings.Cut(strings.TrimPrefix(s, "#/$defs/"), "/")
				refs[name]++
				into[name] = into[name] || rest != "" || !strings.HasPrefix(s, "#/$defs/")
				escaped = escaped || strings.Contains(s, "%")
			}
		}
		if r := nullWrapped(o); r != "" {
			wrapped[strings.TrimPrefix(r, "#/$defs/")]++
		}
		return o, nil
	})
	if err != nil || escaped {
		return ro, err
	}
	nullable := map[string]bool{}
	defs = defs.clone()
	for i, m := range defs.members {
		name := escapeToken(m.key)
		def, ok := m.val.(*object)
		if !ok || into[name] || refs[name] < 2 || wrapped[name] != refs[name] {
			continue
		}
		nullable["#/$defs/"+name] = true
		defs.members[i].val = makeNullable(def.clone())
	}
	if len(nullable) == 0 {
		return ro, nil
	}
	ro = ro.clone()
	ro.set("$defs", defs)
	tree, err := walk(ro, "", func(o *object, _ string) (any, error) {
		if r := nullWrapped(o); nullable[r] {
			return &object{members: []member{{"$ref", r}}}, nil
		}
		return o, nil
	})
	if err != nil {
		return nil, err
	}
	return tree.(*object), nil
}

// nullWrapped returns the $ref of o when o is {"anyOf":[{"$ref":…},{"type":"null"}]}
// and nothing else, and "" otherwise.
func nullWrapped(o *object) string {
	if len(o.members) != 1 || o.members[0].key != "anyOf" {
		return ""
	}
	list, _ := o.members[0].val.([]any)
	if len(list) != 2 {
		return ""
	}
	ref, _ := list[0].(*object)
	null, _ := list[1].(*object)
	if ref == nil || null == nil || len(ref.members) != 1 || ref.members[0].key != "$ref" || !isNullSchema(null) {
		return ""
	}
	s, _ := ref.members[0].val.(string)
	return s
}

// jsonValueName is the key in "$defs" of the schema that stands for a free-form value
// in the OpenAI dialect (see [Registry.Adapt]).
const jsonValueName = "JSONValue"

// freeDefsKey returns name, or name_2, name_3 ... if the root's "$defs" has it.
func freeDefsKey(root *object, name string) string {
	defs, _ := root.get("$defs")
	do, _ := defs.(*object)
	k := name
	for i := 2; do != nil && do.has(k); i++ {
		k = fmt.Sprintf("%s_%d", name, i)
	}
	return k
}

// openaiAdapter rewrites a bundled schema for OpenAI's strict mode.
type openaiAdapter struct {
	ref  string // the $ref of the JSONValue definition
	used bool   // whether a schema refers to it
}

// jsonValue returns the JSONValue definition: every value strict mode can write.
func (a *openaiAdapter) jsonValue() *object {
	typ := func(t string) *object { return &object{members: []member{{"type", t}}} }
	array := typ("array")
	array.set("items", &object{members: []member{{"$ref", a.ref}}})
	return &object{members: []member{
		{"description", "Any JSON value: a string, number, boolean, null, an array of such values, or an object, of which only {} can be written here."},
		{"anyOf", []any{typ("string"), typ("number"), typ("boolean"), typ("null"), array, emptyObject()}},
	}}
}

// emptyObject returns the closed empty object as strict mode wants it spelled.
func emptyObject() *object {
	return &object{members: []member{{"type", "object"}, {"properties", &object{}}, {"required", []any{}},
		{"additionalProperties", false}}}
}

// jsonValueRef returns a schema that refers to the JSONValue definition.
func (a *openaiAdapter) jsonValueRef() *object {
	a.used = true
	return &object{members: []member{{"$ref", a.ref}}}
}

func (a *openaiAdapter) isJSONValue(o *object) bool {
	return len(o.members) == 1 && o.members[0].key == "$ref" && o.members[0].val == a.ref
}

// freeFormNote tells the model about a free-form object that strict mode closes.
const freeFormNote = "any object, but only {} can be written here"

func (a *openaiAdapter) rules(o *object, ptr string) (any, error) {
	if err := oneOfToAnyOf(o, ptr); err != nil {
		return nil, err
	}
	keep(o, keepFormat(openaiKeywords, o, openaiFormats))
	if !o.has("type") && !o.has("enum") && !o.has("const") && !o.has("anyOf") && !o.has("$ref") {
		// The API answers "schema must have a 'type' key".
		if !o.has("properties") {
			return a.freeForm(o), nil
		}
		o.members = append([]member{{"type", "object"}}, o.members...)
	}
	if hasType(o, "array") && !o.has("items") { // "array schema missing items"
		o.set("items", a.jsonValueRef())
	}
	if isObjectSchema(o) && !o.has("properties") {
		if !o.has("additionalProperties") {
			note(o, freeFormNote)
		}
		o.set("properties", &object{}) // "object schema missing properties"
	}
	closeObject(o)
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
					props.members[i].val = a.orNull(ps.clone())
				}
			}
			o.set("properties", props)
			o.set("required", all)
		}
	}
	if o.has("$ref") && len(o.members) > 1 {
		return wrapRef(o, ptr)
	}
	return o, nil
}

// freeForm returns the JSONValue schema in place of o, a schema that says nothing of
// its type once the unsupported keywords are dropped. Its annotations stay around the
// ref, its constraints are noted.
func (a *openaiAdapter) freeForm(o *object) any {
	wrapper := &object{}
	var notes []string
	for _, m := range o.members {
		switch {
		case slices.Contains(annotationKeywords, m.key):
			wrapper.members = append(wrapper.members, m)
		case slices.Contains(notedKeywords, m.key):
			notes = append(notes, m.key+": "+string(marshalTree(m.val)))
		}
	}
	note(wrapper, notes...)
	if len(wrapper.members) == 0 {
		return a.jsonValueRef()
	}
	wrapper.set("anyOf", []any{a.jsonValueRef()})
	return wrapper
}

// orNull returns o changed to also accept null, as makeNullable does, but leaves a
// JSONValue as it is and adds null to the alternatives of an anyOf that o only wraps,
// rather than wrapping it again.
func (a *openaiAdapter) orNull(o *object) any {
	if a.isJSONValue(o) {
		return o
	}
	alts, _ := o.get("anyOf")
	list, ok := alts.([]any)
	if !ok {
		return makeNullable(o)
	}
	for _, m := range o.members {
		if m.key != "anyOf" && !slices.Contains(annotationKeywords, m.key) {
			return makeNullable(o)
		}
	}
	for _, alt := range list {
		if ao, ok := alt.(*object); ok && (a.isJSONValue(ao) || isNullSchema(ao)) {
			return o
		}
	}
	o.set("anyOf", append(slices.Clip(list), &object{members: []member{{"type", "null"}}}))
	return o
}

// isNullSchema reports whether o is {"type":"null"}.
func isNullSchema(o *object) bool {
	return len(o.members) == 1 && o.members[0].key == "type" && o.members[0].val == "null"
}

// wrapRef moves a $ref that has siblings into an anyOf of its own, for the dialects
// whose $ref must stand alone: {"$ref":r,"description":d} becomes
// {"description":d,"anyOf":[{"$ref":r}]}, which means the same.
func wrapRef(o *object, ptr string) (*object, error) {
	if o.has("anyOf") {
		return nil, fmt.Errorf("%w: $ref next to anyOf at %s", ErrUnsupported, ptr)
	}
	ref, _ := o.get("$ref")
	o.del("$ref")
	o.set("anyOf", []any{&object{members: []member{{"$ref", ref}}}})
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
	allowed := keepFormat(anthropicKeywords, o, anthropicFormats)
	if p, ok := o.get("pattern"); ok {
		if ps, _ := p.(string); !simplePattern(ps) {
			allowed = slices.DeleteFunc(slices.Clone(allowed), func(k string) bool { return k == "pattern" })
		}
	}
	keep(o, allowed, notes...)
	if isObjectSchema(o) && !o.has("properties") && !o.has("additionalProperties") {
		note(o, freeFormNote)
	}
	closeObject(o)
	return o, nil
}

// simplePattern reports whether the regular expression p avoids what Claude's
// structured outputs do not support: lookahead, lookbehind, backreferences (numbered or
// named) and word boundaries. Inside a character class, \b is a backspace and (?= is
// plain text.
func simplePattern(p string) bool {
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			if inClass {
				continue
			}
			switch e := p[i]; {
			case e == 'b', e == 'B', e >= '1' && e <= '9', e == 'k' && i+1 < len(p) && p[i+1] == '<':
				return false
			}
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' { // a ] first in a class is a literal
				i++
			}
		case c == '(':
			for _, look := range []string{"(?=", "(?!", "(?<=", "(?<!"} {
				if strings.HasPrefix(p[i:], look) {
					return false
				}
			}
		}
	}
	return true
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
// The formats it documents depend on the type.
var (
	geminiKeywords = []string{"type", "format", "title", "description", "nullable", "enum",
		"items", "minItems", "maxItems", "properties", "required", "minProperties",
		"maxProperties", "minLength", "maxLength", "pattern", "minimum", "maximum", "anyOf",
		"propertyOrdering"}
	geminiFormats = map[string][]string{"STRING": {"date-time", "enum"}, "NUMBER": {"float", "double"},
		"INTEGER": {"int32", "int64"}}
)

// valuesSchema returns a JSON Schema that accepts each of values and says of what type
// they are, for dialect d ([Gemini] or [GeminiJSON]), whose enum cannot hold them all:
// strings (and numbers, for GeminiJSON) are listed in an enum, other values only typed;
// an array gets the schema of all their elements as items, and their counts as minItems
// and maxItems; an object the schema of the values of each key as properties. Values of
// several types give an anyOf, null a {"type":"null"} alternative, or {} where Gemini
// would have it alone. It returns nil when there is no value or an object has no key:
// Gemini cannot say an object without properties.
func valuesSchema(values []any, d Dialect) *object {
	var (
		alts               []any
		strs, nums         []any
		integers           = true
		bools, null        bool
		arrays             [][]any
		objects            []*object
		seenStrs, seenNums = map[string]bool{}, map[json.Number]bool{}
	)
	for _, v := range values {
		switch v := v.(type) {
		case nil:
			null = true
		case bool:
			bools = true
		case string:
			if !seenStrs[v] {
				seenStrs[v] = true
				strs = append(strs, v)
			}
		case json.Number:
			integers = integers && !strings.ContainsAny(string(v), ".eE")
			if !seenNums[v] {
				seenNums[v] = true
				nums = append(nums, v)
			}
		case []any:
			arrays = append(arrays, v)
		case *object:
			objects = append(objects, v)
		}
	}
	typed := func(t string, kv ...member) *object {
		return &object{members: append([]member{{"type", t}}, kv...)}
	}
	if bools {
		alts = append(alts, typed("boolean"))
	}
	if len(nums) > 0 {
		t := "number"
		if integers {
			t = "integer"
		}
		if d == GeminiJSON {
			alts = append(alts, typed(t, member{"enum", nums}))
		} else {
			alts = append(alts, typed(t))
		}
	}
	if len(strs) > 0 {
		alts = append(alts, typed("string", member{"enum", strs}))
	}
	if len(arrays) > 0 {
		var elems []any
		least, most := len(arrays[0]), 0
		for _, a := range arrays {
			elems = append(elems, a...)
			least, most = min(least, len(a)), max(most, len(a))
		}
		s := typed("array")
		if len(elems) > 0 {
			items := valuesSchema(elems, d)
			if items == nil {
				return nil
			}
			s.set("items", items)
		}
		s.set("minItems", json.Number(strconv.Itoa(least)))
		s.set("maxItems", json.Number(strconv.Itoa(most)))
		alts = append(alts, s)
	}
	if len(objects) > 0 {
		props := &object{}
		var keys []string
		for _, o := range objects {
			for _, m := range o.members {
				if !slices.Contains(keys, m.key) {
					keys = append(keys, m.key)
				}
			}
		}
		if len(keys) == 0 {
			return nil
		}
		var required []any
		for _, k := range keys {
			var vals []any
			all := true
			for _, o := range objects {
				v, ok := o.get(k)
				all = all && ok
				if ok {
					vals = append(vals, v)
				}
			}
			ps := valuesSchema(vals, d)
			if ps == nil {
				return nil
			}
			props.set(k, ps)
			if all {
				required = append(required, k)
			}
		}
		s := typed("object", member{"properties", props})
		if len(required) > 0 {
			s.set("required", required)
		}
		alts = append(alts, s)
	}
	if null && len(alts) == 0 && d == Gemini {
		return &object{}
	}
	if null {
		alts = append(alts, typed("null"))
	}
	switch len(alts) {
	case 0:
		return nil
	case 1:
		return alts[0].(*object)
	}
	return &object{members: []member{{"anyOf", alts}}}
}

// addMissing sets on o each keyword of from that o lacks.
func addMissing(o, from *object) {
	for _, m := range from.members {
		if !o.has(m.key) {
			o.set(m.key, m.val)
		}
	}
}

// geminiNull rejects a null type left outside an anyOf: Gemini has no way to say it.
func geminiNull(o *object, ptr string) (any, error) {
	if t, _ := o.get("type"); t == "null" {
		return nil, fmt.Errorf("%w: gemini: type null alone at %s", ErrUnsupported, ptr)
	}
	return o, nil
}

func geminiRules(o *object, ptr string) (any, error) {
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
		} else { // enum values are strings in the API: describe the others, and type them
			o.del("enum")
			if vs := valuesSchema(list, Gemini); vs != nil {
				typed, err := walk(vs, ptr, geminiRules)
				if err != nil {
					return nil, err
				}
				addMissing(o, typed.(*object))
			}
			note(o, "one of: "+string(marshalTree(list)))
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
	props, _ := o.get("properties")
	po, _ := props.(*object)
	if po != nil {
		order := make([]any, len(po.members))
		for i, m := range po.members {
			order[i] = m.key
		}
		o.set("propertyOrdering", order)
	}
	if r, ok := o.get("required"); ok {
		// Gemini rejects a required name with no property schema; the
		// local validation still requires it.
		names := slices.DeleteFunc(slices.Clone(asList(r)), func(n any) bool {
			s, _ := n.(string)
			return po == nil || !po.has(s)
		})
		if len(names) > 0 {
			o.set("required", names)
		} else {
			o.del("required")
		}
	}
	t, _ := o.get("type")
	ts, _ := t.(string)
	keep(o, keepFormat(geminiKeywords, o, geminiFormats[ts]))
	return o, nil
}

// Gemini documents this JSON Schema subset for responseJsonSchema; propertyOrdering is
// its own addition.
var geminiJSONKeywords = []string{"$id", "$defs", "$ref", "$anchor", "type", "format", "title",
	"description", "enum", "items", "prefixItems", "minItems", "maxItems", "minimum", "maximum",
	"anyOf", "oneOf", "properties", "additionalProperties", "required", "propertyOrdering"}

func adaptGeminiJSON(root *object) (any, error) {
	tree, err := renameDefinitions(root)
	if err != nil {
		return nil, err
	}
	if tree, err = walk(tree, "", geminiJSONRules); err != nil {
		return nil, err
	}
	return unrollRequired(tree), nil
}

func geminiJSONRules(o *object, ptr string) (any, error) {
	if c, ok := o.get("const"); ok { // no const: a one-value enum says the same
		o.del("const")
		o.set("enum", []any{c})
	}
	if e, ok := o.get("enum"); ok { // of strings and numbers only
		list, _ := e.([]any)
		if slices.ContainsFunc(list, func(v any) bool { return !isStringOrNumber(v) }) {
			o.del("enum")
			if vs := valuesSchema(list, GeminiJSON); vs != nil {
				typed, err := walk(vs, ptr, geminiJSONRules)
				if err != nil {
					return nil, err
				}
				addMissing(o, typed.(*object))
			}
			if slices.ContainsFunc(list, func(v any) bool { return v != nil && !isStringOrNumber(v) }) {
				note(o, "one of: "+string(marshalTree(list))) // only typed, not listed
			}
		}
	}
	// No propertyOrdering added: the models that take responseJsonSchema
	// (2.5 and later) write properties in the schema's order, and the list
	// would repeat every object's property names in each request.
	keep(o, geminiJSONKeywords)
	// "If $ref is set on a sub-schema, no other properties, except for those starting
	// as a $, may be set."
	if o.has("$ref") && slices.ContainsFunc(o.members, func(m member) bool { return !strings.HasPrefix(m.key, "$") }) {
		return wrapRef(o, ptr)
	}
	return o, nil
}

func isStringOrNumber(v any) bool {
	switch v.(type) {
	case string, json.Number:
		return true
	}
	return false
}

// renameDefinitions renames the draft-7 keyword "definitions" to "$defs", which
// responseJsonSchema knows, and points the refs into them to their new place.
func renameDefinitions(root *object) (any, error) {
	var renamed []string // the pointers, as tokens, of the renamed keywords
	tree, err := walk(root, "", func(o *object, ptr string) (any, error) {
		d, ok := o.get("definitions")
		if !ok {
			return o, nil
		}
		defs, _ := d.(*object)
		if existing, ok := o.get("$defs"); ok {
			eo, _ := existing.(*object)
			if eo == nil || defs == nil {
				return nil, fmt.Errorf("%w: definitions next to $defs at %s", ErrUnsupported, ptr)
			}
			merged := eo.clone()
			for _, m := range defs.members {
				if merged.has(m.key) {
					return nil, fmt.Errorf("%w: %q in both definitions and $defs at %s", ErrUnsupported, m.key, ptr)
				}
				merged.members = append(merged.members, m)
			}
			o.del("definitions")
			o.set("$defs", merged)
		} else {
			for i := range o.members {
				if o.members[i].key == "definitions" {
					o.members[i].key = "$defs"
				}
			}
		}
		renamed = append(renamed, ptr+"/definitions")
		return o, nil
	})
	if err != nil || len(renamed) == 0 {
		return tree, err
	}
	return walk(tree, "", func(o *object, _ string) (any, error) {
		v, _ := o.get("$ref")
		ref, ok := v.(string)
		if !ok || !strings.HasPrefix(ref, "#/") {
			return o, nil
		}
		toks := strings.Split(ref[1:], "/")
		out := slices.Clone(toks)
		for _, p := range renamed {
			ptoks := strings.Split(p, "/")
			if len(ptoks) <= len(toks) && slices.Equal(ptoks, toks[:len(ptoks)]) {
				out[len(ptoks)-1] = "$defs"
			}
		}
		o.set("$ref", "#"+strings.Join(out, "/"))
		return o, nil
	})
}

// unrollRequired keeps cyclic refs out of required properties, where responseJsonSchema
// does not take them ("Cyclic references are unrolled to a limited degree and, as such,
// may only be used within non-required properties"). Within a recursive definition, such
// a property is no longer required, and its object's description says it is; elsewhere
// the property gets a copy of the definition it refers to, whose own properties refer
// on.
func unrollRequired(tree any) any {
	cyclic := cyclicTargets(tree)
	if len(cyclic) == 0 {
		return tree
	}
	inside := func(ptr string) bool {
		return slices.ContainsFunc(cyclic, func(t string) bool { return ptr == t || strings.HasPrefix(ptr, t+"/") })
	}
	var refersCyclic func(s any) bool
	refersCyclic = func(s any) bool {
		o, ok := s.(*object)
		if !ok {
			return false
		}
		if r, ok := o.get("$ref"); ok {
			ref, _ := r.(string)
			return strings.HasPrefix(ref, "#") && slices.Contains(cyclic, ref[1:])
		}
		for _, k := range []string{"anyOf", "oneOf"} {
			alts, _ := o.get(k)
			list, _ := alts.([]any)
			if slices.ContainsFunc(list, refersCyclic) {
				return true
			}
		}
		return false
	}
	// requiredCyclic returns the required properties of o that refer to a cyclic target.
	requiredCyclic := func(o *object) (props *object, names []string) {
		p, _ := o.get("properties")
		props, _ = p.(*object)
		if props == nil {
			return nil, nil
		}
		for _, n := range stringList(o, "required") {
			if s, ok := props.get(n); ok && refersCyclic(s) {
				names = append(names, n)
			}
		}
		return props, names
	}
	tree, _ = walk(tree, "", func(o *object, ptr string) (any, error) {
		_, names := requiredCyclic(o)
		if !inside(ptr) || len(names) == 0 {
			return o, nil
		}
		var required []any
		for _, n := range stringList(o, "required") {
			if !slices.Contains(names, n) {
				required = append(required, n)
			}
		}
		if len(required) == 0 {
			o.del("required")
		} else {
			o.set("required", required)
		}
		note(o, "also required: "+strings.Join(names, ", "))
		return o, nil
	})
	root := tree
	var unroll func(s any) any
	unroll = func(s any) any {
		o := s.(*object)
		if r, ok := o.get("$ref"); ok {
			ref, _ := r.(string)
			target, _ := lookupPointer(root, ref[1:])
			to, ok := target.(*object)
			if !ok {
				return s
			}
			c := to.clone()
			for _, k := range []string{"$defs", "definitions", "$id", "$anchor", "$schema"} {
				c.del(k)
			}
			for _, m := range o.members { // $-keywords next to the ref
				if m.key != "$ref" && !c.has(m.key) {
					c.set(m.key, m.val)
				}
			}
			return c
		}
		c := o.clone()
		for _, k := range []string{"anyOf", "oneOf"} {
			if alts, ok := c.get(k); ok {
				list, _ := alts.([]any)
				out := make([]any, len(list))
				for i, alt := range list {
					out[i] = alt
					if refersCyclic(alt) {
						out[i] = unroll(alt)
					}
				}
				c.set(k, out)
			}
		}
		return c
	}
	tree, _ = walk(tree, "", func(o *object, ptr string) (any, error) {
		props, names := requiredCyclic(o)
		if inside(ptr) || len(names) == 0 {
			return o, nil
		}
		props = props.clone()
		for i, m := range props.members {
			if slices.Contains(names, m.key) {
				props.members[i].val = unroll(m.val)
			}
		}
		o.set("properties", props)
		return o, nil
	})
	return tree
}

// cyclicTargets returns the local ref targets (JSON pointers) of tree whose schema can
// reach itself through refs: those a ref can recurse through.
func cyclicTargets(tree any) []string {
	reaches := func(start string) bool {
		seen := map[string]bool{}
		for queue := []string{start}; len(queue) > 0; queue = queue[1:] {
			target, ok := lookupPointer(tree, queue[0])
			if !ok {
				continue
			}
			for _, next := range localRefs(target) {
				if next == start || strings.HasPrefix(start, next+"/") {
					return true
				}
				if !seen[next] {
					seen[next] = true
					queue = append(queue, next)
				}
			}
		}
		return false
	}
	var cyclic []string
	checked := map[string]bool{}
	for _, start := range localRefs(tree) {
		if !checked[start] {
			checked[start] = true
			if reaches(start) {
				cyclic = append(cyclic, start)
			}
		}
	}
	return cyclic
}
