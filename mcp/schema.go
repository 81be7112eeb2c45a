package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/schema"
)

// toolDef returns the Acts tool definition (002) of the MCP tool t: an
// object schema with its description, the input schema's parameters and
// keywords, and its output schema as the _output property. Both keep
// their local $refs, pointing to the definition's "$defs" (schema.Embed):
// the output's "#" would otherwise mean the tool, and so would the
// input's, _output included. Their definitions are named "input.x" and
// "output.x"; an input that refers to its root is the definition "input".
func toolDef(t *sdk.Tool) (json.RawMessage, error) {
	in, err := schemaJSON(t.InputSchema, `{"type":"object"}`)
	if err != nil {
		return nil, fmt.Errorf("%w: input schema: %w", ErrSchema, err)
	}
	if _, err := ojson.Parse(in); err != nil {
		return nil, fmt.Errorf("%w: input schema is not a JSON object", ErrSchema)
	}
	in, defs, err := schema.Embed(in, "input", nil)
	if err != nil {
		return nil, fmt.Errorf("%w: input schema: %w", ErrSchema, err)
	}
	o, err := ojson.Parse(schema.Deref(in, defs))
	if err != nil {
		return nil, fmt.Errorf("%w: input schema is not a JSON object", ErrSchema)
	}
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
		var outDefs []schema.Def
		if err == nil { // named "output…", its definitions keep apart from the input's
			out, outDefs, err = schema.Embed(out, "output", nil)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: output schema: %w", ErrSchema, err)
		}
		props.Set("_output", withoutKeys(out, "$schema", "$id"))
		defs = append(defs, outDefs...)
	}
	def := &ojson.Object{}
	def.Set("type", json.RawMessage(`"object"`))
	if t.Description != "" {
		def.Set("description", ojson.Quote(t.Description))
	}
	for i, k := range o.Keys {
		switch k {
		case "type", "$schema", "$id", "$defs", "definitions": // moved to the definition's $defs, or no use inside a solution's schema
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
	if len(defs) > 0 {
		def.Set("$defs", schema.AppendDefs(nil, defs))
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
