package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// A Def is one definition of a schema's root "$defs".
type Def struct {
	Name   string
	Schema json.RawMessage
}

// Embed prepares s to be placed inside another schema, where "#" no
// longer means the root of s. Every local ref of s comes to point to a
// definition of the other schema's root "$defs", the only place every
// provider's strict mode documents refs to:
//   - the definitions of the root of s ("$defs", and draft-07's
//     "definitions") move there, each named after name: "x" becomes
//     name+".x", so that the definitions of schemas embedded side by side
//     (a composed schema's tools and output) keep apart, and the model
//     reads whose each is;
//   - a ref to the root of s, as a recursive schema has ({"$ref":"#"}),
//     makes s itself a definition, named name, and body is a ref to it;
//   - a ref to any other place (a property, a branch of an anyOf) gets a
//     copy of its target as a definition (name+".properties.p"): what
//     happens to the schema after (adaptation to a provider's dialect
//     renames keywords and makes optional properties nullable) would
//     move what such a pointer finds.
//
// Definitions are renamed where their name is in taken. Refs to
// registered schemas ("City") stay as they are. Names keep to letters,
// digits, ".", "_" and "-" (others become "_"), so that a ref never needs
// escaping, which not every provider undoes. A schema without "$ref" and
// definitions comes back unchanged; one whose refs do not all resolve as
// plain JSON pointers (anchors, a "$id" below its root) comes back with its
// local refs inlined ([InlineLocal]), or unchanged when they cannot be.
// A "$schema" naming an earlier draft is dropped: refs are JSON pointers
// there too.
//
// Unlike [InlineLocal], which copies each target in place of its ref,
// Embed keeps recursion and does not repeat a definition at every use.
func Embed(s json.RawMessage, name string, taken []string) (body json.RawMessage, defs []Def, err error) {
	if !bytes.Contains(s, []byte(`"$ref"`)) && !bytes.Contains(s, []byte(`"$defs"`)) && !bytes.Contains(s, []byte(`"definitions"`)) {
		return s, nil, nil
	}
	tree, err := parseTree(s)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	root, ok := tree.(*object)
	if !ok {
		return s, nil, nil
	}
	if !embeddable(root) {
		// Its refs are not all plain JSON pointers: inlined where they can
		// be (a "$id" below the root), else left as they are (anchors
		// resolve in whatever document holds them).
		if inlined, err := InlineLocal(s); err == nil {
			return inlined, nil, nil
		}
		return s, nil, nil
	}
	e := &embedder{tree: root, names: slices.Clone(taken), name: name, copies: map[string]string{}}
	// The body, without what only made it a document of its own.
	top := root.clone()
	for _, k := range []string{"$defs", "definitions", "$id", "$schema"} {
		top.del(k)
	}
	for _, kw := range []string{"$defs", "definitions"} {
		v, ok := root.get(kw)
		if !ok {
			continue
		}
		m, ok := v.(*object)
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s is not an object", ErrInvalidSchema, kw)
		}
		for _, d := range m.members {
			e.add("/"+kw+"/"+escapeToken(d.key), name+"."+d.key, d.val)
		}
	}
	b, err := e.rewrite(top)
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i < len(e.defs); i++ { // rewriting a definition may add more
		if e.trees[i], err = e.rewrite(e.trees[i]); err != nil {
			return nil, nil, err
		}
	}
	body = marshalTree(b)
	if key := e.copies[""]; key != "" {
		body = json.RawMessage(`{"$ref":` + string(marshalTree(ref(key))) + `}`)
	}
	return body, e.used(b), nil
}

// used returns the definitions that body, rewritten, refers to, directly
// or through one another, in the order they were added: the others would
// only be read by the model.
func (e *embedder) used(body any) []Def {
	index := map[string]int{}
	for i, d := range e.defs {
		index[ref(d.Name)] = i
	}
	seen := make([]bool, len(e.defs))
	var visit func(t any)
	visit = func(t any) {
		_, _ = walk(t, "", func(o *object, _ string) (any, error) {
			v, _ := o.get("$ref")
			if r, ok := v.(string); ok {
				if i, ok := index[r]; ok && !seen[i] {
					seen[i] = true
					visit(e.trees[i])
				}
			}
			return o, nil
		})
	}
	visit(body)
	if key := e.copies[""]; key != "" && !seen[index[ref(key)]] {
		seen[index[ref(key)]] = true
		visit(e.trees[index[ref(key)]])
	}
	var out []Def
	for i, d := range e.defs {
		if seen[i] {
			out = append(out, Def{Name: d.Name, Schema: marshalTree(e.trees[i])})
		}
	}
	return out
}

// embedder collects the definitions Embed returns.
type embedder struct {
	tree   *object // s as given
	names  []string
	name   string            // the root's name as a definition
	copies map[string]string // JSON pointer in s → name of its definition
	defs   []Def
	trees  []any // the schema of each of defs, before its refs are rewritten
}

// embeddable reports whether the refs of the schema document root resolve
// as plain JSON pointers into it, whatever draft its "$schema" names.
func embeddable(root *object) bool {
	r := root.clone()
	r.del("$schema")
	return plainRefs(r, true)
}

// defName keeps a definition's name to letters, digits, ".", "_" and "-".
func defName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// add makes the schema t, found at JSON pointer ptr in s, a definition
// named after base, and returns its name.
func (e *embedder) add(ptr, base string, t any) string {
	base = defName(base)
	key := base
	for i := 2; slices.Contains(e.names, key); i++ {
		key = fmt.Sprintf("%s_%d", base, i)
	}
	e.names = append(e.names, key)
	e.copies[ptr] = key
	e.defs = append(e.defs, Def{Name: key})
	e.trees = append(e.trees, t)
	return key
}

// rewrite points the local refs of t to their definitions.
func (e *embedder) rewrite(t any) (any, error) {
	return walk(t, "", func(o *object, ptr string) (any, error) {
		v, ok := o.get("$ref")
		r, isString := v.(string)
		if !ok || !isString || !strings.HasPrefix(r, "#") {
			return o, nil
		}
		_, frag, err := splitRef(r)
		if err != nil {
			return nil, err
		}
		key := e.copies[frag]
		if key == "" {
			target, found := lookupPointer(e.tree, frag)
			if !found {
				return nil, fmt.Errorf("%w: %q at %s points nowhere", ErrInvalidRef, r, ptr+"/$ref")
			}
			if frag == "" {
				top := e.tree.clone()
				for _, k := range []string{"$defs", "definitions", "$id", "$schema"} {
					top.del(k)
				}
				target = top
				key = e.add(frag, e.name, target)
			} else {
				key = e.add(frag, e.name+strings.ReplaceAll(frag, "/", "."), target)
			}
		}
		o.set("$ref", ref(key))
		return o, nil
	})
}

// Deref returns the definition body refers to, when its "$ref" names one
// of defs, with the keywords beside that ref merged in; else body. Embed
// makes a schema that refers to its own root a definition, and its body a
// ref to it, and a schema may be a ref with a description beside it, while
// a caller that adds to the body (a tool's meta-properties) wants the
// schema itself.
func Deref(body json.RawMessage, defs []Def) json.RawMessage {
	if !bytes.Contains(body, []byte(`"$ref"`)) {
		return body
	}
	tree, err := parseTree(body)
	o, ok := tree.(*object)
	if err != nil || !ok {
		return body
	}
	r, _ := o.get("$ref")
	for _, d := range defs {
		if r != ref(d.Name) {
			continue
		}
		target, err := parseTree(d.Schema)
		if err != nil {
			return body
		}
		merged, err := mergeRef(o, target, "")
		if err != nil {
			return body
		}
		return marshalTree(merged)
	}
	return body
}

// AppendDefs appends defs to dst as the value of a schema's "$defs": an
// object of their schemas by name, in their order.
func AppendDefs(dst []byte, defs []Def) []byte {
	dst = append(dst, '{')
	for i, d := range defs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(appendTree(dst, d.Name), ':'), d.Schema...)
	}
	return append(dst, '}')
}

// ref is the local ref to the root definition key.
func ref(key string) string {
	return "#" + (&url.URL{Fragment: "/$defs/" + escapeToken(key)}).EscapedFragment()
}
