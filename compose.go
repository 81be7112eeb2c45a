package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/schema"
)

// compose builds the schema the model answers with: the advisors that
// speak at this step, the properties the handlers added (meta, ...), then
// calls (when tools are defined: an array whose items are the tool
// schemas), then the user's
// schema as a nullable output, then the definitions they share. The model
// writes them in that order, so it decides on actions before it commits
// to an output.
//
// With anyCalls, calls are any objects: what a loop validates a solution
// against, since it checks each call against its own tool as it streams
// in and reports a bad one as an error of that call, not of the answer.
func (b *Build) compose(output json.RawMessage, outputDefs []schema.Def, anyCalls bool) (json.RawMessage, error) {
	// Written by hand: the parts are compact JSON already, and their
	// order is what the model sees.
	size := 512 + len(output)
	for _, v := range b.props.Values {
		size += len(v) + 32
	}
	for _, v := range b.tools.Values {
		size += len(v) + 1
	}
	var err error
	if b.advice, b.adviceDefs, err = b.advisorsProperty(); err != nil {
		return nil, err
	}
	var s bytes.Buffer
	s.Grow(size + len(b.advice))
	s.WriteString(`{"type":"object","properties":{`)
	var required []string
	if b.advice != nil { // the advisors speak first (017)
		s.WriteString(`"advisors":`)
		s.Write(b.advice)
		s.WriteByte(',')
		required = append(required, "advisors")
	}
	required = append(required, b.required...)
	for i, k := range b.props.Keys {
		s.Write(ojson.Quote(k))
		s.WriteByte(':')
		s.Write(b.props.Values[i])
		s.WriteByte(',')
	}
	var defs []schema.Def
	if len(b.tools.Keys) > 0 {
		s.WriteString(`"calls":{"type":"array","description":"Tool calls to make now, in order; empty when none is needed.","items":`)
		tools := b.tools.Values
		if !anyCalls {
			var instance *schema.Def
			tools, instance = withInstances(tools, b.instances, b.instancesOpen)
			defs = sharedDefs(tools, instance)
			for _, name := range b.tools.Keys {
				if sh := b.shape(name); sh != nil {
					defs = append(defs, sh.defs...)
				}
			}
			b.offered, b.offeredDefs = tools, defs
		}
		if anyCalls {
			s.WriteString(`{"type":"object"}`)
		} else if len(tools) == 1 {
			s.Write(tools[0])
		} else {
			s.WriteString(`{"anyOf":[`)
			for i, v := range tools {
				if i > 0 {
					s.WriteByte(',')
				}
				s.Write(v)
			}
			s.WriteString(`]}`)
		}
		s.WriteString(`},`)
		required = append(required, "calls")
	}
	s.WriteString(`"output":`)
	if err := json.Compact(&s, output); err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	required = append(required, "output")
	rb, _ := json.Marshal(required)
	s.WriteString(`},"required":`)
	s.Write(rb)
	s.WriteString(`,"additionalProperties":false`)
	if defs = append(append(defs, b.adviceDefs...), outputDefs...); len(defs) > 0 {
		s.WriteString(`,"$defs":`)
		s.Write(schema.AppendDefs(s.AvailableBuffer(), defs))
	}
	s.WriteByte('}')
	return s.Bytes(), nil
}

// offeredCall returns the schema a call of tool met in the schema last
// composed, standing on its own; nil when tool was not offered.
func (b *Build) offeredCall(tool string) json.RawMessage {
	i := slices.Index(b.tools.Keys, tool)
	if i < 0 || i >= len(b.offered) {
		return nil
	}
	return withDefs(b.offered[i], b.offeredDefs)
}

// withDefs returns the schema object s with defs as its "$defs", so that
// it stands on its own, when it refers to any.
func withDefs(s json.RawMessage, defs []schema.Def) json.RawMessage {
	if len(defs) == 0 || !bytes.Contains(s, []byte(`"$ref"`)) {
		return s
	}
	o, err := ojson.Parse(s)
	if err != nil {
		return s // not an object: a boolean schema has no refs
	}
	o.Set("$defs", schema.AppendDefs(nil, defs))
	return o.Bytes()
}

// metaDefs are the schemas of the meta-properties every tool offers. The
// composed schema holds each once, in its "$defs", and each tool refers to
// it (metaRef): written out in each of ten tools they made up two thirds
// of the schema, which the model reads at every step.
var metaDefs = []schema.Def{
	{Name: "_reasoningForCall", Schema: reasoningSchema},
	{Name: "_reference", Schema: refSchema},
	{Name: "_outputPath", Schema: outputPathSchema},
	{Name: "_outputMethod", Schema: outputMethodSchema},
}

// metaDef returns the shared schema of meta-property k, or nil.
func metaDef(k string) json.RawMessage {
	for _, d := range metaDefs {
		if d.Name == k {
			return d.Schema
		}
	}
	return nil
}

// metaRef refers to the shared definition name.
func metaRef(name string) string { return `{"$ref":"#/$defs/` + name + `"}` }

// metaNames are the names the shared definitions take in a composed
// schema's "$defs"; an output's own definitions are renamed around them.
var metaNames = []string{"_reasoningForCall", "_reference", "_outputPath", "_outputMethod", "_instance"}

// sharedDefs returns the shared definitions the tools refer to, in the
// order of metaDefs, then the instances' when there are some.
func sharedDefs(tools []json.RawMessage, instance *schema.Def) []schema.Def {
	defs := slices.Clone(metaDefs)
	if instance != nil {
		defs = append(defs, *instance)
	}
	return slices.DeleteFunc(defs, func(d schema.Def) bool {
		ref := []byte(metaRef(d.Name))
		return !slices.ContainsFunc(tools, func(t json.RawMessage) bool { return bytes.Contains(t, ref) })
	})
}

// outputSchema returns the user's output schema as the composed schema
// holds it: nullable, its refs pointing to where it now lives and its
// definitions, for the composed schema's root, apart.
func outputSchema(user json.RawMessage) (json.RawMessage, []schema.Def, error) {
	if len(user) == 0 || string(user) == "true" || string(user) == "{}" {
		return json.RawMessage(`{}`), nil, nil
	}
	o, err := ojson.Parse(user)
	if err != nil {
		return nil, nil, err
	}
	// A schema with refs is wrapped: it may become a ref to itself.
	wrap := o.Has("anyOf") || o.Has("oneOf") || o.Has("allOf") || o.Has("const") || o.Has("enum") ||
		bytes.Contains(user, []byte(`"$ref"`))
	body, defs, err := schema.Embed(user, "_output", metaNames)
	if err != nil {
		return nil, nil, err
	}
	if wrap {
		return json.RawMessage(`{"anyOf":[` + string(body) + `,{"type":"null"}]}`), defs, nil
	}
	out, err := nullable(body)
	return out, defs, err
}

// nullable lets the output s, which allows one type or a list of them,
// be null too, which means "not done yet" (010).
func nullable(s json.RawMessage) (json.RawMessage, error) {
	o, err := ojson.Parse(s)
	if err != nil {
		return nil, err
	}
	t := o.Get("type")
	switch {
	case t == nil:
		return s, nil // no type constraint: null is allowed already
	case t[0] == '"':
		if string(t) == `"null"` {
			return s, nil
		}
		o.Set("type", json.RawMessage(`[`+string(t)+`,"null"]`))
	case t[0] == '[':
		var ts []string
		if err := json.Unmarshal(t, &ts); err != nil {
			return nil, fmt.Errorf("type: %w", err)
		}
		for _, x := range ts {
			if x == "null" {
				return s, nil
			}
		}
		ts = append(ts, "null")
		tb, _ := json.Marshal(ts)
		o.Set("type", tb)
	}
	return o.Bytes(), nil
}

// instanceAny is the _instance a call is checked against: a plan's calls
// name their own instances. The model is offered those of its context
// instead (withInstances).
const instanceAny = `{"type":"string"}`

// withInstances offers the instances of the context as the _instance of
// each tool that does not declare its own (013): an enum of them, or with
// open (instances came after the context), any string. With no instance,
// the tools offer none and are sent as they are.
func withInstances(tools []json.RawMessage, instances []string, open bool) ([]json.RawMessage, *schema.Def) {
	if len(instances) == 0 {
		return tools, nil
	}
	ids, _ := json.Marshal(instances)
	def := &schema.Def{Name: "_instance", Schema: json.RawMessage(`{"enum":` + string(ids) + `,"description":"The instance whose data the call reads and writes; leave it out for the global data."}`)}
	if open {
		def.Schema = json.RawMessage(`{"type":"string","description":"The instance whose data the call reads and writes: an _instance of the data; leave it out for the global data."}`)
	}
	out := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		out[i] = t
		o, err := ojson.Parse(t)
		if err != nil {
			continue
		}
		props, err := ojson.Parse(o.Get("properties"))
		if err != nil || props.Has("_instance") {
			continue
		}
		props.Set("_instance", json.RawMessage(metaRef("_instance")))
		o.Set("properties", props.Bytes())
		out[i] = o.Bytes()
	}
	return out, def
}
