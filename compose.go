package agent

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/augceo/agent/internal/ojson"
)

// compose builds the schema the model answers with: the properties the
// handlers added (meta, advisors, ...), then calls (when tools are
// defined: an array whose items are the tool schemas), then the user's
// schema as a nullable output. The model writes them in that order, so it
// decides on actions before it commits to an output.
//
// With anyCalls, calls are any objects: what a loop validates a solution
// against, since it checks each call against its own tool as it streams
// in and reports a bad one as an error of that call, not of the answer.
func (b *Build) compose(output json.RawMessage, anyCalls bool) (json.RawMessage, error) {
	// Written by hand: the parts are compact JSON already, and their
	// order is what the model sees.
	size := 256 + len(output)
	for _, v := range b.props.Values {
		size += len(v) + 32
	}
	for _, v := range b.tools.Values {
		size += len(v) + 1
	}
	var s bytes.Buffer
	s.Grow(size)
	s.WriteString(`{"type":"object","properties":{`)
	required := append([]string(nil), b.required...)
	for i, k := range b.props.Keys {
		s.Write(ojson.Quote(k))
		s.WriteByte(':')
		s.Write(b.props.Values[i])
		s.WriteByte(',')
	}
	if len(b.tools.Keys) > 0 {
		s.WriteString(`"calls":{"type":"array","description":"Tool calls to make now, in order; empty when none is needed.","items":`)
		tools := b.tools.Values
		if !anyCalls {
			tools = withInstances(tools, b.instances)
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
	s.WriteString(`,"additionalProperties":false}`)
	return s.Bytes(), nil
}

// nullable lets the output be null, which means "not done yet" (010).
func nullable(s json.RawMessage) (json.RawMessage, error) {
	if len(s) == 0 || string(s) == "true" || string(s) == "{}" {
		return json.RawMessage(`{}`), nil
	}
	o, err := ojson.Parse(s)
	if err != nil {
		return nil, err
	}
	if o.Has("$ref") || o.Has("anyOf") || o.Has("oneOf") || o.Has("allOf") || o.Has("const") || o.Has("enum") {
		return json.RawMessage(`{"anyOf":[` + string(s) + `,{"type":"null"}]}`), nil
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
// each tool that does not declare its own (013): an enum of them. With no
// instance, the tools offer none and are sent as they are.
func withInstances(tools []json.RawMessage, instances []string) []json.RawMessage {
	if len(instances) == 0 {
		return tools
	}
	ids, _ := json.Marshal(instances)
	enum := json.RawMessage(`{"enum":` + string(ids) + `,"description":"The instance whose data the call reads and writes; leave it out for the global data."}`)
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
		props.Set("_instance", enum)
		o.Set("properties", props.Bytes())
		out[i] = o.Bytes()
	}
	return out
}
