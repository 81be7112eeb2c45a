package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/schema"
)

// toolDef returns the Acts tool definition (002) of the MCP tool t: an
// object schema with its description, the input schema's parameters and
// keywords, and its output schema as the _output property. Local $refs
// are inlined: a definition is embedded in the schema of a solution,
// where "#" is no longer its root.
func toolDef(t *sdk.Tool) (json.RawMessage, error) {
	in, err := schemaJSON(t.InputSchema, `{"type":"object"}`)
	if err != nil {
		return nil, fmt.Errorf("%w: input schema: %w", ErrSchema, err)
	}
	if _, err := ojson.Parse(in); err != nil {
		return nil, fmt.Errorf("%w: input schema is not a JSON object", ErrSchema)
	}
	if in, err = inlineRefs(in); err != nil {
		return nil, fmt.Errorf("%w: input schema: %w", ErrSchema, err)
	}
	o, _ := ojson.Parse(in) // an object still
	var typ string
	if v := o.Get("type"); v != nil && (json.Unmarshal(v, &typ) != nil || typ != "object") {
		return nil, fmt.Errorf("%w: input schema has type %s, not \"object\"", ErrSchema, v)
	}
	props := &ojson.Object{}
	if p := o.Get("properties"); p != nil {
		if props, err = ojson.Parse(p); err != nil {
			return nil, fmt.Errorf("%w: input schema: properties is not an object", ErrSchema)
		}
	}
	for _, k := range props.Keys {
		if strings.HasPrefix(k, "_") {
			return nil, fmt.Errorf("%w: parameter %q: names starting with \"_\" are kept for meta-properties", ErrSchema, k)
		}
	}
	if t.OutputSchema != nil {
		out, err := schemaJSON(t.OutputSchema, "")
		if err == nil {
			out, err = inlineRefs(out)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: output schema: %w", ErrSchema, err)
		}
		props.Set("_output", withoutKeys(out, "$schema", "$id", "$defs", "definitions"))
	}
	def := &ojson.Object{}
	def.Set("type", json.RawMessage(`"object"`))
	if t.Description != "" {
		def.Set("description", ojson.Quote(t.Description))
	}
	for i, k := range o.Keys {
		switch k {
		case "type", "$schema", "$id", "$defs", "definitions": // inlined, or no use inside a solution's schema
		case "description":
			if t.Description == "" {
				def.Set(k, o.Values[i])
			}
		case "properties":
			def.Set(k, props.Bytes())
		default:
			def.Set(k, o.Values[i])
		}
	}
	if !def.Has("properties") && len(props.Keys) > 0 {
		def.Set("properties", props.Bytes())
	}
	b := def.Bytes()
	if _, err := schema.Compile(b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSchema, err)
	}
	return b, nil
}

// schemaJSON returns a schema of an SDK tool as JSON, or dflt when it
// has none.
func schemaJSON(s any, dflt string) (json.RawMessage, error) {
	switch s := s.(type) {
	case nil:
		return json.RawMessage(dflt), nil
	case json.RawMessage:
		if !json.Valid(s) {
			return nil, errors.New("not valid JSON")
		}
		return s, nil
	}
	return encode(s)
}

// withoutKeys returns the object doc without keys, or doc as it is when
// it is not an object.
func withoutKeys(doc json.RawMessage, keys ...string) json.RawMessage {
	o, err := ojson.Parse(doc)
	if err != nil {
		return doc
	}
	for _, k := range keys {
		o.Delete(k)
	}
	return o.Bytes()
}

// inlineRefs replaces each local $ref of a schema document ("#/$defs/x",
// any JSON pointer into the document) with the schema it points to. A
// recursive ref cannot be inlined and is an error; other refs are left
// as they are.
func inlineRefs(doc json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(doc, []byte(`"$ref"`)) {
		return doc, nil
	}
	return inline(doc, doc, nil)
}

// notSchemas are keywords whose values are data or definitions, not
// schemas to walk: definitions are inlined where they are used.
var notSchemas = []string{"$defs", "definitions", "enum", "const", "default", "examples"}

func inline(v, root json.RawMessage, stack []string) (json.RawMessage, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return v, nil
	}
	switch v[0] {
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, err
		}
		b := []byte{'['}
		for i, it := range items {
			x, err := inline(it, root, stack)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, x...)
		}
		return append(b, ']'), nil
	case '{':
	default:
		return v, nil
	}
	o, err := ojson.Parse(v)
	if err != nil {
		return nil, err
	}
	var target json.RawMessage
	var ref string
	if r := o.Get("$ref"); r != nil && json.Unmarshal(r, &ref) == nil && strings.HasPrefix(ref, "#") {
		if slices.Contains(stack, ref) {
			return nil, fmt.Errorf("$ref %q is recursive, which a tool's schema cannot be", ref)
		}
		t, err := pointer(root, ref[1:])
		if err != nil {
			return nil, fmt.Errorf("$ref %q: %w", ref, err)
		}
		if target, err = inline(t, root, append(stack, ref)); err != nil {
			return nil, err
		}
		o.Delete("$ref")
	}
	for i, k := range o.Keys {
		if slices.Contains(notSchemas, k) {
			continue
		}
		x, err := inline(o.Values[i], root, stack)
		if err != nil {
			return nil, err
		}
		o.Values[i] = x
	}
	switch {
	case target == nil:
		return o.Bytes(), nil
	case len(o.Keys) == 0:
		return target, nil
	}
	// A $ref with siblings applies both, as allOf does (2020-12).
	return json.RawMessage(`{"allOf":[` + string(target) + `,` + string(o.Bytes()) + `]}`), nil
}

// pointer returns the value at the JSON pointer p (RFC 6901, as a URI
// fragment) in doc.
func pointer(doc json.RawMessage, p string) (json.RawMessage, error) {
	p, err := url.PathUnescape(p)
	if err != nil {
		return nil, err
	}
	if p == "" {
		return doc, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, errors.New("only JSON pointers are supported")
	}
	cur := doc
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		cur = bytes.TrimSpace(cur)
		var next json.RawMessage
		switch {
		case len(cur) > 0 && cur[0] == '{':
			if o, err := ojson.Parse(cur); err == nil {
				next = o.Get(tok)
			}
		case len(cur) > 0 && cur[0] == '[':
			var items []json.RawMessage
			if i, err := strconv.Atoi(tok); err == nil && json.Unmarshal(cur, &items) == nil && i >= 0 && i < len(items) {
				next = items[i]
			}
		}
		if next == nil {
			return nil, errors.New("nothing there")
		}
		cur = next
	}
	return cur, nil
}
