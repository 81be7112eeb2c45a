package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/schema"
)

// compose builds the schema the model answers with: the properties the
// handlers added (meta, advisors, ...), then calls (when tools are
// defined: an array whose items are the tool schemas), then the user's
// schema as a nullable output. The model writes them in that order, so it
// decides on actions before it commits to an output.
//
// With trustCalls, calls are any objects: a loop checks each call against
// its own tool as it streams in (prepareCall), so its final check of the
// whole solution need not do it again.
func (b *Build) compose(user json.RawMessage, trustCalls bool) (json.RawMessage, error) {
	output, err := nullable(user)
	if err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	// Written by hand: the parts are compact JSON already, and this runs
	// at every step of a loop.
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
		if trustCalls {
			s.WriteString(`{"type":"object"}`)
		} else if len(b.tools.Keys) == 1 {
			s.Write(b.tools.Values[0])
		} else {
			s.WriteString(`{"anyOf":[`)
			for i, v := range b.tools.Values {
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

// composeKey is what compose reads.
type composeKey struct {
	user     json.RawMessage
	propKeys []string
	props    []json.RawMessage
	required []string
	tools    []json.RawMessage
}

func (k *composeKey) equal(o *composeKey) bool {
	return bytes.Equal(k.user, o.user) && slices.Equal(k.propKeys, o.propKeys) && slices.Equal(k.required, o.required) &&
		slices.EqualFunc(k.props, o.props, rawEqual) && slices.EqualFunc(k.tools, o.tools, rawEqual)
}

func rawEqual(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

// composed is a cached composed schema.
type composed struct {
	key      composeKey
	composed json.RawMessage
	compiled *schema.Schema
	trusted  *schema.Schema // compiled with trustCalls, once a loop asked for it
}

// composedCacheSize bounds the composed schemas a Registry keeps.
const composedCacheSize = 8

// composedFor returns the cached composed schema for k, or nil.
func (r *Registry) composedFor(k *composeKey) *composed {
	r.composedMu.Lock()
	defer r.composedMu.Unlock()
	for _, e := range r.composed {
		if e != nil && e.key.equal(k) {
			return e
		}
	}
	return nil
}

// keepComposed caches a composed schema, replacing the oldest.
func (r *Registry) keepComposed(k *composeKey, s json.RawMessage, c *schema.Schema) *composed {
	e := &composed{composed: s, compiled: c, key: composeKey{
		user: k.user, propKeys: slices.Clone(k.propKeys), props: slices.Clone(k.props),
		required: slices.Clone(k.required), tools: slices.Clone(k.tools),
	}}
	r.composedMu.Lock()
	defer r.composedMu.Unlock()
	r.composed[r.composedNext] = e
	r.composedNext = (r.composedNext + 1) % composedCacheSize
	return e
}

// trustedSchema returns p's composed schema compiled with trustCalls,
// made once per cached composed schema.
func (p *prepared) trustedSchema() (*schema.Schema, error) {
	if p.trusted != nil {
		return p.trusted, nil
	}
	reg := p.build.Registry
	if e := p.cached; e != nil {
		reg.composedMu.Lock()
		t := e.trusted
		reg.composedMu.Unlock()
		if t != nil {
			p.trusted = t
			return t, nil
		}
	}
	s, err := p.build.compose(p.user, true)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	t, err := reg.compile(s)
	if err != nil {
		return nil, fmt.Errorf("agent: composed schema: %w", err)
	}
	p.trusted = t
	if e := p.cached; e != nil {
		reg.composedMu.Lock()
		e.trusted = t
		reg.composedMu.Unlock()
	}
	return t, nil
}
