package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/schema"
)

// Func registers the Go function f as the tool name, with f as the code
// that runs its calls, in one step. The tool's parameters are the schema
// of P, its _output the schema of R (both from [schema.For], so struct
// tags describe the fields: `jsonschema:"description=...,minimum=1"`, or
// `jsonschema_description:"..."` for text with commas), and description
// says what it does. It is what [Registry.Tool] with that definition,
// [Registry.Activity] under the same name and [Bind] do together:
//
//	type City struct {
//		Name string `json:"name" jsonschema_description:"A city, e.g. Paris"`
//	}
//	err := agent.Func(reg, "weather", "Current weather in a city",
//		func(ctx context.Context, c City) (Weather, error) { ... })
//
// A registered tool is offered to the model only by a tool message of the
// context: [message.Tool] names one, [Registry.Offer] makes one message
// of several.
//
// P must have an object schema: a struct, a pointer to one, or a map
// with string keys. The model never sees R's schema, only the
// description (say there what the tool returns), but each result must
// meet it: a nil slice or map, which encodes as null, does not, so
// return empty ones or tag the field omitempty. A nil r means
// [DefaultRegistry]; Func is a function, not a method, because methods
// cannot have type parameters.
//
// Unlike Registry.Tool and Registry.Activity, which panic, Func returns
// an error and registers nothing when name is empty or starts with "_",
// when f is nil, when P or R has no JSON Schema (a channel, a function,
// a complex number) or P's is not an object, and when a tool or an
// activity of that name is registered already ([ErrDuplicate]).
func Func[P, R any](r *Registry, name, description string, f func(ctx context.Context, params P) (R, error)) error {
	if r == nil {
		r = DefaultRegistry
	}
	if why := badToolName(name); why != "" {
		return errorf("agent: Func: invalid tool name %q: %s", name, why)
	}
	if f == nil {
		return errorf("agent: Func %q: nil function", name)
	}
	def, err := funcTool[P, R](description)
	if err != nil {
		return errorf("agent: Func %q: %w", name, err)
	}
	return r.toolWithActivity(name, def, Bind(f))
}

// funcTool returns the definition of a tool taking a P and returning an
// R: P's schema with the description after its type, and R's schema as
// the _output property. A recursive type refers to its root ("#"), which
// in the tool would mean the tool, _output included: it becomes a
// definition of the tool's "$defs", named after the type.
func funcTool[P, R any](description string) (json.RawMessage, error) {
	params, err := typeSchema[P]()
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	result, err := typeSchema[R]()
	if err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	params, defs, err := schema.Embed(params, cmp.Or(reflect.TypeFor[P]().Name(), "params"), nil)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	if deref := schema.Deref(params, defs); reflect.TypeFor[R]() == reflect.TypeFor[P]() && !bytes.Equal(deref, params) {
		// P refers to itself and so is a definition: R, the same type, is
		// that definition too.
		result = params
		params = deref
	} else {
		params = deref
		taken := make([]string, len(defs))
		for i, d := range defs {
			taken[i] = d.Name
		}
		var rdefs []schema.Def
		if result, rdefs, err = schema.Embed(result, cmp.Or(reflect.TypeFor[R]().Name(), "result"), taken); err != nil {
			return nil, fmt.Errorf("result: %w", err)
		}
		defs = append(defs, rdefs...)
	}
	o, err := ojson.Parse(params)
	var typ string
	if err == nil {
		err = json.Unmarshal(o.Get("type"), &typ)
	}
	if err != nil || typ != "object" {
		return nil, fmt.Errorf("parameters: %v has the schema %s, not an object's: use a struct", reflect.TypeFor[P](), params)
	}
	props := &ojson.Object{}
	if p := o.Get("properties"); p != nil {
		if props, err = ojson.Parse(p); err != nil {
			return nil, fmt.Errorf("parameters: properties: %w", err)
		}
	}
	props.Set("_output", result)
	o.Set("properties", props.Bytes())
	if description != "" {
		def := &ojson.Object{} // the description after "type", where schema.For writes one
		for i, k := range o.Keys {
			if k != "description" {
				def.Set(k, o.Values[i])
			}
			if k == "type" {
				def.Set("description", ojson.Quote(description))
			}
		}
		o = def
	}
	if len(defs) > 0 {
		o.Set("$defs", schema.AppendDefs(nil, defs))
	}
	return o.Bytes(), nil
}

// typeSchema returns the schema of T, or what keeps it from saying what
// T's tags say (see schema.Check).
func typeSchema[T any]() (json.RawMessage, error) {
	if err := schema.Check[T](); err != nil {
		return nil, err
	}
	return schema.For[T](), nil
}

// toolWithActivity registers a tool and its activity under name, both or
// neither.
func (r *Registry) toolWithActivity(name string, def json.RawMessage, a Activity) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[name]; ok {
		return fmt.Errorf("%w: tool %q", ErrDuplicate, name)
	}
	if _, ok := r.activities[name]; ok {
		return fmt.Errorf("%w: activity %q", ErrDuplicate, name)
	}
	if r.activities == nil {
		r.activities = map[string]Activity{}
	}
	r.tools[name] = def
	r.activities[name] = a
	return nil
}
