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

// Embed prepares s to be placed at the JSON pointer at inside another
// schema, where "#" no longer means the root of s. The definitions of its
// root ("$defs", and draft-07's "definitions") are taken out and returned,
// renamed where their name is in taken, for the other schema's root
// "$defs": providers' strict modes document definitions there. Each local
// ref of s then points to the new place of its target, so a recursive
// schema ({"$ref":"#"}) stays recursive. Refs to registered schemas
// ("City") stay as they are. A schema without "$ref" and definitions comes
// back unchanged.
//
// Unlike [InlineLocal], which copies each target in place of its ref,
// Embed keeps recursion and does not repeat a definition at every use.
func Embed(s json.RawMessage, at string, taken []string) (json.RawMessage, []Def, error) {
	if !bytes.Contains(s, []byte(`"$ref"`)) && !bytes.Contains(s, []byte(`"$defs"`)) && !bytes.Contains(s, []byte(`"definitions"`)) {
		return s, nil, nil
	}
	tree, err := parseTree(s)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	root, ok := tree.(*object)
	if !ok {
		return s, nil, nil // a boolean schema has no refs
	}
	root = root.clone()
	// The names the definitions take in the other schema's root.
	type hoisted struct{ keyword, name, key string }
	var defs []hoisted
	var trees []any
	names := slices.Clone(taken)
	for _, kw := range []string{"$defs", "definitions"} {
		v, ok := root.get(kw)
		if !ok {
			continue
		}
		root.del(kw)
		m, ok := v.(*object)
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s is not an object", ErrInvalidSchema, kw)
		}
		for _, d := range m.members {
			key := d.key
			for i := 2; slices.Contains(names, key); i++ {
				key = fmt.Sprintf("%s_%d", d.key, i)
			}
			names = append(names, key)
			defs = append(defs, hoisted{kw, d.key, key})
			trees = append(trees, d.val)
		}
	}
	// move gives the new place of the target at JSON pointer frag.
	move := func(frag string) string {
		for _, d := range defs {
			p := "/" + d.keyword + "/" + escapeToken(d.name)
			if frag == p || strings.HasPrefix(frag, p+"/") {
				return "/$defs/" + escapeToken(d.key) + frag[len(p):]
			}
		}
		return at + frag
	}
	rewrite := func(t any) (any, error) {
		return walk(t, "", func(o *object, ptr string) (any, error) {
			v, ok := o.get("$ref")
			ref, isString := v.(string)
			if !ok || !isString || !strings.HasPrefix(ref, "#") {
				return o, nil
			}
			_, frag, err := splitRef(ref)
			if err != nil {
				return nil, err
			}
			o.set("$ref", "#"+(&url.URL{Fragment: move(frag)}).EscapedFragment())
			return o, nil
		})
	}
	body, err := rewrite(root)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Def, len(defs))
	for i, d := range defs {
		t, err := rewrite(trees[i])
		if err != nil {
			return nil, nil, err
		}
		out[i] = Def{Name: d.key, Schema: marshalTree(t)}
	}
	return marshalTree(body), out, nil
}
