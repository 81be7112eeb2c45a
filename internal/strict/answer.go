package strict

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A Call chooses one call of a solution made by [Solution].
type Call struct {
	// Tool names the tool; its item of the schema's calls is the schema of
	// the call.
	Tool string
	// Set gives the JSON values of properties of the call, parameters and
	// meta-properties alike. Every other property the item offers gets a
	// generated value. "null" means none: the property is null where its
	// schema allows null (a strict dialect's optional property), and left
	// out where it does not and is optional.
	Set map[string]json.RawMessage
}

// Solution returns a solution of the composed schema s as a provider got
// it (any dialect: JSON Schema, or Gemini's Schema): the properties of the
// root in order, calls holding the calls asked for, output the given
// value (nil for null), and a generated value for any other property
// (meta, advisors).
//
// Each call has every property its tool's item offers: the values of
// Call.Set, and generated ones for the rest, valid for the item's schema.
// The meta-properties get values that mean something: _tool the tool's
// name, _reasoningForCall a sentence, _outputPath its const or enum value,
// else †state.<tool>, _outputMethod, _instance and _scopes the first value
// their schema allows, and _output and the parameters an example of their
// schema (the first alternative of an anyOf, so a parameter gets a value
// rather than a reference).
func Solution(s json.RawMessage, output json.RawMessage, calls ...Call) (json.RawMessage, error) {
	root, err := parse(s)
	if err != nil {
		return nil, fmt.Errorf("strict: schema: %w", err)
	}
	g := &generator{root: root}
	ro, ok := g.resolve(root).(*object)
	if !ok {
		return nil, errors.New("strict: the schema is not an object schema")
	}
	props, _ := ro.get("properties")
	po, _ := props.(*object)
	if po == nil {
		return nil, errors.New("strict: the schema has no properties")
	}
	sol := &object{}
	for i, k := range po.keys {
		var v any
		switch k {
		case "calls":
			items, err := g.items(po.vals[i])
			if err != nil {
				return nil, err
			}
			list := []any{}
			for _, c := range calls {
				item, ok := items.byName[c.Tool]
				if !ok {
					return nil, fmt.Errorf("strict: the schema offers no tool %q", c.Tool)
				}
				call, err := g.call(c, item)
				if err != nil {
					return nil, err
				}
				list = append(list, call)
			}
			v = list
		case "output":
			if output != nil {
				v = json.RawMessage(output)
			}
		default:
			if v, err = g.example(po.vals[i], 0); err != nil {
				return nil, fmt.Errorf("strict: %s: %w", k, err)
			}
		}
		sol.keys = append(sol.keys, k)
		sol.vals = append(sol.vals, v)
	}
	if len(calls) > 0 && !po.has("calls") {
		return nil, errors.New("strict: the schema offers no calls")
	}
	return marshal(sol), nil
}

// Tools returns the names of the tools the composed schema s offers in
// calls, in order.
func Tools(s json.RawMessage) ([]string, error) {
	root, err := parse(s)
	if err != nil {
		return nil, fmt.Errorf("strict: schema: %w", err)
	}
	g := &generator{root: root}
	calls, ok := g.property(root, "calls")
	if !ok {
		return nil, nil
	}
	items, err := g.items(calls)
	if err != nil {
		return nil, err
	}
	return items.names, nil
}

// CallSchema returns the schema of a call to tool in the composed schema
// s, with its own $ref resolved; refs inside it still point into s.
func CallSchema(s json.RawMessage, tool string) (json.RawMessage, error) {
	root, err := parse(s)
	if err != nil {
		return nil, fmt.Errorf("strict: schema: %w", err)
	}
	g := &generator{root: root}
	calls, ok := g.property(root, "calls")
	if !ok {
		return nil, errors.New("strict: the schema offers no calls")
	}
	items, err := g.items(calls)
	if err != nil {
		return nil, err
	}
	item, ok := items.byName[tool]
	if !ok {
		return nil, fmt.Errorf("strict: the schema offers no tool %q", tool)
	}
	return marshal(item), nil
}

// Offered returns the properties a call to tool may have in the composed
// schema s, in the order the schema gives them.
func Offered(s json.RawMessage, tool string) ([]string, error) {
	item, err := CallSchema(s, tool)
	if err != nil {
		return nil, err
	}
	o, _ := parse(item)
	props, _ := o.(*object).get("properties")
	po, _ := props.(*object)
	if po == nil {
		return nil, nil
	}
	return slices.Clone(po.keys), nil
}

// Example returns a value that schema s accepts (JSON Schema, or Gemini's
// Schema): its const, the first value of its enum, the first alternative
// of an anyOf that is not null, and otherwise a value of its first type
// but null, with every property of an object and one item in an array.
func Example(s json.RawMessage) (json.RawMessage, error) {
	root, err := parse(s)
	if err != nil {
		return nil, fmt.Errorf("strict: schema: %w", err)
	}
	g := &generator{root: root}
	v, err := g.example(root, 0)
	if err != nil {
		return nil, err
	}
	return marshal(v), nil
}

// generator makes values for the schema root.
type generator struct {
	root any
}

// resolve follows $ref (local) until a schema without one.
func (g *generator) resolve(s any) any {
	for range 32 {
		o, ok := s.(*object)
		if !ok {
			return s
		}
		r, ok := o.get("$ref")
		ref, isString := r.(string)
		if !ok || !isString || !strings.HasPrefix(ref, "#") {
			return s
		}
		target, found := lookup(g.root, ref[1:])
		if !found {
			return s
		}
		s = target
	}
	return s
}

// property returns the schema of property name of the object schema s.
func (g *generator) property(s any, name string) (any, bool) {
	o, ok := g.resolve(s).(*object)
	if !ok {
		return nil, false
	}
	props, _ := o.get("properties")
	po, _ := props.(*object)
	if po == nil {
		return nil, false
	}
	return po.get(name)
}

// items returns the item schema of each tool of the calls schema s.
func (g *generator) items(s any) (itemsByTool, error) {
	calls, ok := g.resolve(s).(*object)
	if !ok {
		return itemsByTool{}, errors.New("strict: calls is not a schema")
	}
	it, ok := calls.get("items")
	if !ok {
		return itemsByTool{}, errors.New("strict: calls has no items")
	}
	out := itemsByTool{byName: map[string]*object{}}
	var add func(s any)
	add = func(s any) {
		o, ok := g.resolve(s).(*object)
		if !ok {
			return
		}
		if alts, ok := o.get("anyOf"); ok {
			list, _ := alts.([]any)
			for _, a := range list {
				add(a)
			}
			return
		}
		tool, ok := g.property(o, "_tool")
		if !ok {
			return
		}
		name := toolName(g.resolve(tool))
		if name == "" {
			return
		}
		if _, dup := out.byName[name]; !dup {
			out.names = append(out.names, name)
		}
		out.byName[name] = o
	}
	add(it)
	return out, nil
}

// itemsByTool indexes the call items of a composed schema.
type itemsByTool struct {
	byName map[string]*object
	names  []string
}

// toolName returns the name a _tool schema allows: its const or the only
// value of its enum.
func toolName(s any) string {
	o, ok := s.(*object)
	if !ok {
		return ""
	}
	if c, ok := o.get("const"); ok {
		name, _ := c.(string)
		return name
	}
	if e, ok := o.get("enum"); ok {
		for _, v := range e.([]any) {
			if name, ok := v.(string); ok {
				return name
			}
		}
	}
	return ""
}

// call makes one call of tool c.Tool for its item schema.
func (g *generator) call(c Call, item *object) (any, error) {
	props, _ := item.get("properties")
	po, _ := props.(*object)
	if po == nil {
		return nil, fmt.Errorf("strict: the item of tool %q has no properties", c.Tool)
	}
	for k := range c.Set {
		if !po.has(k) {
			return nil, fmt.Errorf("strict: tool %q offers no property %q (it offers %s)", c.Tool, k, strings.Join(po.keys, ", "))
		}
	}
	req, _ := item.get("required")
	required, _ := stringList(req)
	call := &object{}
	for i, k := range po.keys {
		var v any
		if raw, ok := c.Set[k]; ok {
			if string(raw) == "null" && !g.acceptsNull(po.vals[i], 0) {
				if slices.Contains(required, k) {
					return nil, fmt.Errorf("strict: tool %q: %q is required and cannot be null", c.Tool, k)
				}
				continue
			}
			v = raw
		} else {
			var err error
			if v, err = g.meta(c.Tool, k, po.vals[i]); err != nil {
				return nil, fmt.Errorf("strict: tool %q, property %q: %w", c.Tool, k, err)
			}
		}
		call.keys = append(call.keys, k)
		call.vals = append(call.vals, v)
	}
	return call, nil
}

// meta generates the value of property k of a call to tool.
func (g *generator) meta(tool, k string, s any) (any, error) {
	switch k {
	case "_tool":
		return tool, nil
	case "_reasoningForCall":
		return "The task needs " + tool + " now.", nil
	case "_outputPath":
		o, _ := g.resolve(s).(*object)
		if o != nil && (o.has("const") || o.has("enum") || o.has("anyOf")) {
			return g.example(s, 0)
		}
		return "†state." + tool, nil
	}
	return g.example(s, 0)
}

// formatExamples are values of the string formats the providers know.
var formatExamples = map[string]string{
	"date-time": "2025-10-26T12:00:00Z", "date": "2025-10-26", "time": "12:00:00Z", "duration": "P1D",
	"email": "agent@example.com", "hostname": "example.com", "uri": "https://example.com/",
	"ipv4": "192.0.2.1", "ipv6": "2001:db8::1", "uuid": "123e4567-e89b-12d3-a456-426614174000",
}

// example makes a value schema s accepts.
func (g *generator) example(s any, depth int) (any, error) {
	if depth > 32 {
		return nil, errors.New("the schema nests too deep (recursive?) for an example")
	}
	s = g.resolve(s)
	if b, ok := s.(bool); ok {
		if !b {
			return nil, errors.New("the false schema accepts nothing")
		}
		return "example", nil
	}
	o, ok := s.(*object)
	if !ok {
		return nil, fmt.Errorf("not a schema: %s", describe(s))
	}
	if r, ok := o.get("$ref"); ok {
		return nil, fmt.Errorf("$ref %s does not resolve to a schema", describe(r))
	}
	if c, ok := o.get("const"); ok {
		return c, nil
	}
	if e, ok := o.get("enum"); ok {
		list, _ := e.([]any)
		for _, v := range list {
			if v != nil {
				return v, nil
			}
		}
		if len(list) > 0 {
			return nil, nil
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if a, ok := o.get(k); ok {
			list, _ := a.([]any)
			for _, alt := range list {
				if ao, ok := g.resolve(alt).(*object); ok && isNullOnly(ao) {
					continue
				}
				return g.example(alt, depth+1)
			}
			if len(list) > 0 {
				return nil, nil
			}
		}
	}
	t, _ := o.get("type")
	names, _ := typeNames(t)
	typ := ""
	for _, n := range names {
		if !strings.EqualFold(n, "null") {
			typ = strings.ToLower(n)
			break
		}
	}
	if typ == "" && len(names) > 0 {
		return nil, nil // type null
	}
	if typ == "" && o.has("properties") {
		typ = "object"
	}
	switch typ {
	case "object":
		out := &object{}
		props, _ := o.get("properties")
		if po, ok := props.(*object); ok {
			for i, k := range po.keys {
				v, err := g.example(po.vals[i], depth+1)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				out.keys = append(out.keys, k)
				out.vals = append(out.vals, v)
			}
		}
		return out, nil
	case "array":
		n := 1
		if m, ok := count(o, "minItems"); ok && m > n {
			n = m
		}
		if m, ok := count(o, "maxItems"); ok && m < n {
			n = m
		}
		list := []any{}
		items, hasItems := o.get("items")
		for range n {
			if !hasItems {
				list = append(list, "example")
				continue
			}
			v, err := g.example(items, depth+1)
			if err != nil {
				return nil, fmt.Errorf("items: %w", err)
			}
			list = append(list, v)
		}
		return list, nil
	case "integer", "number":
		n := 1.0
		if m, ok := o.get("minimum"); ok {
			if f, err := m.(json.Number).Float64(); err == nil && f > n {
				n = f
			}
		}
		if m, ok := o.get("exclusiveMinimum"); ok {
			if f, err := m.(json.Number).Float64(); err == nil && f >= n {
				n = f + 1
			}
		}
		if m, ok := o.get("maximum"); ok {
			if f, err := m.(json.Number).Float64(); err == nil && f < n {
				n = f
			}
		}
		if typ == "integer" {
			return json.Number(fmt.Sprintf("%d", int64(n))), nil
		}
		return json.Number(fmt.Sprintf("%g", n)), nil
	case "boolean":
		return true, nil
	case "string", "":
		return stringExample(o)
	}
	return nil, fmt.Errorf("unknown type %q", typ)
}

// acceptsNull reports whether schema s accepts null.
func (g *generator) acceptsNull(s any, depth int) bool {
	s = g.resolve(s)
	if b, ok := s.(bool); ok || depth > 32 {
		return b
	}
	o, ok := s.(*object)
	if !ok {
		return false
	}
	if n, _ := o.get("nullable"); n == true {
		return true
	}
	if c, ok := o.get("const"); ok {
		return c == nil
	}
	if e, ok := o.get("enum"); ok {
		list, _ := e.([]any)
		if !slices.Contains(list, nil) {
			return false
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if a, ok := o.get(k); ok {
			list, _ := a.([]any)
			if !slices.ContainsFunc(list, func(alt any) bool { return g.acceptsNull(alt, depth+1) }) {
				return false
			}
		}
	}
	if t, ok := o.get("type"); ok {
		names, _ := typeNames(t)
		return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, "null") })
	}
	return true
}

// isNullOnly reports whether o accepts only null.
func isNullOnly(o *object) bool {
	t, _ := o.get("type")
	names, _ := typeNames(t)
	return len(names) == 1 && strings.EqualFold(names[0], "null")
}

// count returns the integer value of keyword k of o.
func count(o *object, k string) (int, bool) {
	v, ok := o.get(k)
	if !ok {
		return 0, false
	}
	var n int
	switch v := v.(type) {
	case json.Number:
		_, err := fmt.Sscan(string(v), &n)
		return n, err == nil
	case string:
		_, err := fmt.Sscan(v, &n)
		return n, err == nil
	}
	return 0, false
}

// stringExample makes a string for a string schema: one of its format, or
// one that matches its pattern.
func stringExample(o *object) (any, error) {
	f, _ := o.get("format")
	if ex, ok := formatExamples[describeString(f)]; ok {
		return ex, nil
	}
	p, ok := o.get("pattern")
	if !ok {
		s := "example"
		if n, ok := count(o, "minLength"); ok && n > len(s) {
			s += strings.Repeat("x", n-len(s))
		}
		return s, nil
	}
	pattern := describeString(p)
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	for _, s := range []string{"example", "†state.example", "†state", "a", "A", "0", "a0", ""} {
		if re.MatchString(s) {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no example matches pattern %q: set the value", pattern)
}

// Property returns the schema of property name of the root object schema
// s ($ref resolved), such as "output", with the root's definitions when it
// refers to them.
func Property(s json.RawMessage, name string) (json.RawMessage, error) {
	root, err := parse(s)
	if err != nil {
		return nil, fmt.Errorf("strict: schema: %w", err)
	}
	g := &generator{root: root}
	p, ok := g.property(root, name)
	if !ok {
		return nil, fmt.Errorf("strict: the schema has no property %q", name)
	}
	out := g.resolve(p)
	if refTargets(out) == nil {
		return marshal(out), nil
	}
	// It refers to definitions of the root: they come along.
	o, ok := out.(*object)
	if !ok {
		return nil, fmt.Errorf("strict: property %q refers to definitions of its schema", name)
	}
	withDefs := &object{keys: slices.Clone(o.keys), vals: slices.Clone(o.vals)}
	if ro, ok := root.(*object); ok {
		for _, k := range []string{"$defs", "definitions"} {
			if d, ok := ro.get(k); ok && !withDefs.has(k) {
				withDefs.keys, withDefs.vals = append(withDefs.keys, k), append(withDefs.vals, d)
			}
		}
	}
	return marshal(withDefs), nil
}
