package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// DefaultCacheSize is how many compiled anonymous schemas a [Registry] keeps (see
// [Registry.Compile]). When the cache is full it is emptied and starts over.
const DefaultCacheSize = 512

// A Registry holds named schemas, the flat registry of the spec's Schemistry: a schema
// refers to another by name with {"$ref": "MetaSchema"}, or to a part of it with
// {"$ref": "MetaSchema#/$defs/version"}; a ref starting with "#" points inside the schema
// that contains it.
//
// Registered schemas never change, so compiled schemas are cached. A Registry is safe
// for concurrent use. The zero value is an empty registry, as is [NewRegistry]'s. Methods
// on a nil *Registry behave as on an empty one, except that they cache nothing and
// registering panics; the package-level [Compile] and [Adapt] use one.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]*entry
	cache   [2]map[string]*Schema // by source; [1] for CompileFor(OpenAI)
}

type entry struct {
	raw      json.RawMessage
	tree     any     // parsed, "nullable" translated; never modified
	compiled *Schema // lazily, under Registry.mu
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{entries: map[string]*entry{}, cache: [2]map[string]*Schema{{}, {}}}
}

// Register adds the schema s under name, like [Registry.Add], and panics if Add returns
// an error: a duplicate or malformed registration is a setup bug.
func (r *Registry) Register(name string, s json.RawMessage) {
	if err := r.Add(name, s); err != nil {
		panic(err)
	}
}

// Add adds the schema s under name. Use it for schemas loaded at run time; use
// [Registry.Register] at setup. A name is not empty and has no "#", space or control
// character. Add checks that s is a JSON Schema 2020-12 document (an object or a
// boolean; the OpenAPI keyword "nullable" is accepted, see the package documentation),
// but not that the names it refers to exist: they may be registered later, and are
// resolved when a schema is compiled or adapted. The registry keeps its own copy of s.
func (r *Registry) Add(name string, s json.RawMessage) error {
	if name == "" || strings.ContainsFunc(name, func(c rune) bool {
		return c == '#' || unicode.IsSpace(c) || unicode.IsControl(c)
	}) {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	tree, err := prepare(s)
	if err != nil {
		return fmt.Errorf("add %q: %w", name, err)
	}
	// Compile it alone, names stubbed out, to report a malformed schema now.
	stub, err := walk(tree, "", func(o *object, _ string) (any, error) {
		if ref, ok := o.get("$ref"); ok {
			if s, ok := ref.(string); ok && !strings.HasPrefix(s, "#") {
				o.set("$ref", "#")
			}
		}
		return o, nil
	})
	if err != nil {
		return fmt.Errorf("add %q: %w", name, err)
	}
	if _, err := compileResources(map[string]any{rootURL: stub}); err != nil {
		return fmt.Errorf("add %q: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.entries == nil {
		r.entries = map[string]*entry{}
	}
	if _, ok := r.entries[name]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicate, name)
	}
	r.entries[name] = &entry{raw: slices.Clone(s), tree: tree}
	return nil
}

// prepare parses a schema document, translates "nullable" and caps counts
// (see capCounts).
func prepare(s json.RawMessage) (any, error) {
	tree, err := parseTree(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	switch tree.(type) {
	case *object, bool:
	default:
		return nil, fmt.Errorf("%w: a schema is an object or a boolean", ErrInvalidSchema)
	}
	if at, n := numberOutOfRange(tree); n != "" {
		return nil, fmt.Errorf("%w: %s", ErrInvalidSchema, rangeError(at, n))
	}
	return walk(tree, "", func(o *object, ptr string) (any, error) {
		capCounts(o)
		return translateNullable(o, ptr)
	})
}

// Lookup returns the schema registered under name, as it was registered.
func (r *Registry) Lookup(name string) (json.RawMessage, error) {
	e, err := r.entry(name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(e.raw), nil
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.entries))
	for n := range r.entries {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r *Registry) entry(name string) (*entry, error) {
	if r != nil {
		r.mu.RLock()
		e, ok := r.entries[name]
		r.mu.RUnlock()
		if ok {
			return e, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
}

// Schema returns the compiled schema registered under name. It is compiled on first use
// and cached; an error names the unknown ref or the invalid part.
func (r *Registry) Schema(name string) (*Schema, error) {
	e, err := r.entry(name)
	if err != nil {
		return nil, err
	}
	r.mu.RLock()
	s := e.compiled
	r.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	s, err = r.compileTree(e.tree, name, false)
	if err != nil {
		return nil, fmt.Errorf("compile %q: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.compiled == nil {
		e.compiled = s
	}
	return e.compiled, nil
}

// Compile compiles the schema s, resolving its refs to names in r. Compiled schemas
// are cached by content (up to [DefaultCacheSize]), so compiling the same bytes again is
// a map lookup; callers on a hot path should still keep the *Schema.
func (r *Registry) Compile(s json.RawMessage) (*Schema, error) {
	return r.compile(s, false)
}

// CompileFor compiles the schema s to validate what a provider returns for the schema
// [Adapt](s, d) produced. It keeps every rule of s, and adds back what the adaptation
// forced on the provider: for [OpenAI], whose strict mode makes every property required,
// an optional property may be null (null means absent). For the other dialects it is
// [Registry.Compile].
func (r *Registry) CompileFor(s json.RawMessage, d Dialect) (*Schema, error) {
	return r.compile(s, d == OpenAI)
}

func (r *Registry) compile(s json.RawMessage, relax bool) (*Schema, error) {
	ci := 0
	if relax {
		ci = 1
	}
	if r != nil {
		r.mu.RLock()
		c, ok := r.cache[ci][string(s)] // no allocation for the key
		r.mu.RUnlock()
		if ok {
			return c, nil
		}
	}
	tree, err := prepare(s)
	if err != nil {
		return nil, err
	}
	c, err := r.compileTree(tree, "", relax)
	if err != nil {
		return nil, err
	}
	if relax {
		rules, err := r.caseRules(tree)
		switch {
		case err != nil:
			return nil, err
		case rules != nil:
			c.written, err = compileResources(map[string]any{rootURL: rules})
		default:
			c.written, err = r.compile(s, false)
		}
		if err != nil {
			return nil, err
		}
	}
	if r != nil {
		r.mu.Lock()
		if r.cache[ci] == nil || len(r.cache[ci]) >= DefaultCacheSize {
			r.cache[ci] = map[string]*Schema{}
		}
		r.cache[ci][string(s)] = c
		r.mu.Unlock()
	}
	return c, nil
}

// Compile compiles a self-contained schema: one whose refs all start with "#".
func Compile(s json.RawMessage) (*Schema, error) {
	return (*Registry)(nil).Compile(s)
}

const rootURL = "acts://schemas/"

// nameURL is the resource URL of a registered schema. Refs are rewritten to these URLs
// before the library sees them, so it never resolves a name by itself.
func nameURL(name string) string {
	return rootURL + url.PathEscape(name)
}

// compileTree compiles tree (the schema registered as name, or an anonymous one when
// name is "") together with every named schema it reaches.
func (r *Registry) compileTree(tree any, name string, relax bool) (*Schema, error) {
	top := rootURL
	if name != "" {
		top = nameURL(name)
	}
	resources := map[string]any{}
	queue := []string{name}
	trees := map[string]any{name: tree}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		t, refs, err := r.resolveNames(trees[n], n)
		if err != nil {
			return nil, err
		}
		if relax {
			if t, err = walk(t, "", relaxOptional); err != nil {
				return nil, err
			}
		}
		u := rootURL
		if n != "" {
			u = nameURL(n)
		}
		resources[u] = t
		for _, ref := range refs {
			if _, ok := trees[ref]; ok {
				continue
			}
			e, _ := r.entry(ref) // resolveNames checked it exists
			trees[ref] = e.tree
			queue = append(queue, ref)
		}
	}
	c, err := compileResourcesAt(resources, top)
	if err != nil {
		return nil, err
	}
	c.named = len(resources) > 1
	return c, nil
}

// resolveNames rewrites the named refs in tree (the schema registered as in, or the
// anonymous root when in is "") to resource URLs, and returns the names it refers to.
func (r *Registry) resolveNames(tree any, in string) (any, []string, error) {
	var names []string
	out, err := walk(tree, "", func(o *object, ptr string) (any, error) {
		for _, kw := range []string{"$ref", "$dynamicRef"} {
			v, ok := o.get(kw)
			if !ok {
				continue
			}
			ref, ok := v.(string)
			if !ok || strings.HasPrefix(ref, "#") {
				continue
			}
			name, _, err := splitRef(ref)
			if err != nil {
				return nil, err
			}
			if _, err := r.entry(name); err != nil {
				where := ptr + "/" + kw
				if in != "" {
					return nil, fmt.Errorf("%w %q at %s in %q", ErrUnknownRef, ref, where, in)
				}
				return nil, fmt.Errorf("%w %q at %s", ErrUnknownRef, ref, where)
			}
			_, rawFrag, _ := strings.Cut(ref, "#")
			target := nameURL(name)
			if rawFrag != "" {
				target += "#" + rawFrag
			}
			o.set(kw, target)
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		return o, nil
	})
	return out, names, err
}

// relaxOptional lets each optional property of an object schema be null.
func relaxOptional(o *object, _ string) (any, error) {
	props, ok := o.get("properties")
	if !ok {
		return o, nil
	}
	po, ok := props.(*object)
	if !ok {
		return o, nil
	}
	required := stringList(o, "required")
	po = po.clone()
	for i, m := range po.members {
		if slices.Contains(required, m.key) {
			continue
		}
		if ps, ok := m.val.(*object); ok {
			po.members[i].val = relaxedNullable(ps.clone())
		}
	}
	o.set("properties", po)
	return o, nil
}

// relaxedNullable is makeNullable for a schema only validated with, never
// sent: it wraps one whose applicators might refuse null even where its
// type takes it ({"type":"string","allOf":[{"enum":["red"]}]}), rather
// than saying so more briefly where they would not.
func relaxedNullable(o *object) any {
	if refusesNullBeside(o) {
		return wrapNullable(o)
	}
	return makeNullable(o)
}

func stringList(o *object, kw string) []string {
	v, _ := o.get(kw)
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// metaschemaError returns err, the library's error for a schema that is
// not valid JSON Schema, with the compact text of a [ValidationError]:
// where in the schema, one failure a line ("at /properties/x/type: ..."),
// rather than the library's tree of every keyword of the metaschema it
// went through. Other errors are returned as they are.
func metaschemaError(err error) error {
	se, ok := errors.AsType[*jsonschema.SchemaValidationError](err)
	if !ok {
		return err
	}
	ve, ok := errors.AsType[*jsonschema.ValidationError](se.Err)
	if !ok {
		return err
	}
	return &invalidSchema{text: fromLibrary(ve).Error(), err: err}
}

// invalidSchema is the library's error for a schema that is not valid
// JSON Schema, with a text of ours.
type invalidSchema struct {
	text string
	err  error
}

func (e *invalidSchema) Error() string { return e.text }
func (e *invalidSchema) Unwrap() error { return e.err }

// noLoader keeps the library from reading files or the network: every resource a schema
// needs is added before compiling.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%w %q", ErrUnknownRef, u)
}

func compileResources(resources map[string]any) (*Schema, error) {
	return compileResourcesAt(resources, rootURL)
}

func compileResourcesAt(resources map[string]any, top string) (*Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	for _, u := range slices.Sorted(maps.Keys(resources)) {
		if err := c.AddResource(u, plain(resources[u])); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
		}
	}
	lib, err := c.Compile(top)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, metaschemaError(err))
	}
	return &Schema{lib: lib, fast: buildFast(resources, top)}, nil
}
