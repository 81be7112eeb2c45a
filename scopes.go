package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/augceo/agent/internal/jsonfast"
	"github.com/augceo/agent/internal/ojson"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/ref"
)

// ErrScope reports a malformed _scopes entry.
var ErrScope = errors.New("agent: invalid scope")

// callScopes returns the scopes of a call (015): the tool's provisioned
// ones (a const in its _scopes schema) win over what the call asks for.
// ok is false when the call has none, so it sees no context at all.
func callScopes(def, params json.RawMessage) (scopes []string, ok bool, err error) {
	if bytes.Contains(def, []byte(`"_scopes"`)) {
		var d struct { // declared here: it escapes to the heap
			Properties struct {
				Scopes struct {
					Const []string `json:"const"`
				} `json:"_scopes"`
			} `json:"properties"`
		}
		_ = json.Unmarshal(def, &d)
		if c := d.Properties.Scopes.Const; c != nil {
			return c, true, nil
		}
	}
	if !bytes.Contains(params, []byte(`_scopes`)) && bytes.IndexByte(params, '\\') < 0 {
		return nil, false, nil // no member can be _scopes
	}
	return paramScopes(params)
}

// paramScopes reads the _scopes a call asks for (apart from callScopes,
// whose fast path would otherwise allocate what the closure captures).
func paramScopes(params json.RawMessage) (scopes []string, ok bool, err error) {
	jsonfast.Members(params, func(k string, v []byte) bool {
		if k != "_scopes" {
			return true
		}
		if string(v) == "null" { // what a strict provider writes for none
			return false
		}
		ok = true
		if err = json.Unmarshal(v, &scopes); err != nil {
			err = fmt.Errorf("%w: _scopes must be an array of kinds or references: %w", ErrScope, err)
		}
		return false
	})
	return scopes, ok, err
}

// scopedContext builds what a call may see: for each scope, either a kind
// (its merged global value, then the call's instance's value) or a
// reference (a data message holding just that value, at its path). Only
// merged values are given, never the messages behind them, so no other
// call's metadata and no other instance's data can leak through. It
// returns the scopes read too, for scopeSource.
func scopedContext(log *message.Log, instance string, scopes []string) ([]message.Message, scopeSet, error) {
	var out []message.Message
	set := scopeSet{scopes: scopes}
	seen := map[string]bool{}
	for _, s := range scopes {
		if seen[s] {
			continue
		}
		seen[s] = true
		r, isRef, err := parseScope(s)
		if err != nil {
			return nil, scopeSet{}, err
		}
		if isRef {
			set.paths = append(set.paths, r)
			var src ref.Source = log
			if instance != "" {
				src = log.Instance(instance)
			}
			v, err := src.Lookup(r.Kind, r.Path)
			if err != nil {
				return nil, scopeSet{}, scopeError(s, err)
			}
			out = append(out, message.Message{Type: message.TypeData, Kind: r.Kind, Data: nest(r.Path, v)})
			continue
		}
		set.kinds = append(set.kinds, s)
		ids := []message.Identity{{Kind: s}}
		if instance != "" {
			ids = append(ids, message.Identity{Kind: s, Instance: instance})
		}
		for _, id := range ids {
			v, ok, err := log.Value(id)
			if err != nil {
				return nil, scopeSet{}, err
			}
			if ok {
				out = append(out, message.Message{Type: message.TypeData, Kind: id.Kind, Instance: id.Instance, Data: v})
			}
		}
	}
	return out, set, nil
}

// scopeSource returns the source a scoped call's references resolve
// against: src (the log, or the call's instance of it) for the kinds in
// scope, which reads what scopedContext gave; and for the references in
// scope, a log of just their values (scoped and set, as scopedContext
// returned them).
// Reading the log itself rather than a log built of the kinds' values
// keeps a call's cost flat as the state it sees grows.
func scopeSource(src ref.Source, instance string, set scopeSet, scoped []message.Message) (ref.Source, error) {
	s := scopedSource{src: src, scopeSet: set}
	var refs []message.Message
	for _, m := range scoped {
		if !slices.Contains(s.kinds, m.Kind) {
			refs = append(refs, m)
		}
	}
	if len(refs) > 0 {
		view, err := message.NewLog(refs...)
		if err != nil {
			return nil, err
		}
		s.refs = view
		if instance != "" {
			s.refs = view.Instance(instance)
		}
	}
	return s, nil
}

// scopeSet is what a call's _scopes let it read: kinds, and references.
type scopeSet struct {
	scopes []string  // as the call names them
	kinds  []string  // the kinds in scope
	paths  []ref.Ref // the references in scope
}

// parseScopes reads a call's scopes.
func parseScopes(scopes []string) (scopeSet, error) {
	s := scopeSet{scopes: scopes}
	for _, sc := range scopes {
		r, isRef, err := parseScope(sc)
		switch {
		case err != nil:
			return scopeSet{}, err
		case isRef:
			s.paths = append(s.paths, r)
		default:
			s.kinds = append(s.kinds, sc)
		}
	}
	return s, nil
}

// parseScope reads one scope: a kind, or one reference (isRef).
func parseScope(s string) (r ref.Ref, isRef bool, err error) {
	if !ref.IsExpression(s) {
		if !ref.KindValid(s) {
			return ref.Ref{}, false, fmt.Errorf("%w %q: not a kind or a reference", ErrScope, s)
		}
		return ref.Ref{}, false, nil
	}
	e, err := ref.Parse(s)
	if err != nil {
		return ref.Ref{}, false, fmt.Errorf("%w %q: %w", ErrScope, s, err)
	}
	if len(e.Alts) != 1 || len(e.Alts[0]) != 1 {
		return ref.Ref{}, false, fmt.Errorf("%w %q: a scope names one reference", ErrScope, s)
	}
	return e.Alts[0][0], true, nil
}

// holdsKind reports whether kind is in scope as a whole.
func (s scopeSet) holdsKind(kind string) bool { return slices.Contains(s.kinds, kind) }

// holds reports whether a reference to path of kind reads what the
// scopes give.
func (s scopeSet) holds(kind string, path ref.Path) bool {
	return s.holdsKind(kind) || slices.ContainsFunc(s.paths, func(r ref.Ref) bool { return r.Kind == kind && r.Path.Related(path) })
}

// outside is the error of a reference outside the scopes: the context
// may well have a value there, so it says why the call cannot read it.
func (s scopeSet) outside() string {
	return "outside the call's _scopes (" + strings.Join(s.scopes, ", ") + ")"
}

// scopedSource is a [ref.Source] that reads only what a scoped call sees.
type scopedSource struct {
	src ref.Source // the kinds in scope are read from src
	scopeSet
	refs ref.Source // the references in scope, or nil
}

func (s scopedSource) Lookup(kind string, path ref.Path) (json.RawMessage, error) {
	switch {
	case s.holdsKind(kind):
		return s.src.Lookup(kind, path)
	case s.refs != nil && s.holds(kind, path):
		return s.refs.Lookup(kind, path)
	}
	return nil, &ref.Error{Offset: -1, Err: fmt.Errorf("%w: %s", ref.ErrNotFound, s.outside())}
}

// scopeError says which scope did not resolve: a lookup's error knows
// the path, not the reference it came from.
func scopeError(scope string, err error) error {
	if e, ok := errors.AsType[*ref.Error](err); ok && e.Expr == "" {
		named := *e
		named.Expr, named.Ref = scope, scope
		err = &named
	}
	return fmt.Errorf("_scopes: %w", err)
}

// nest wraps v under the keys of path: {"a":{"b":v}}.
func nest(path ref.Path, v json.RawMessage) json.RawMessage {
	for _, seg := range slices.Backward(path) {
		v = json.RawMessage(`{` + string(ojson.Quote(seg)) + `:` + string(v) + `}`)
	}
	return v
}

// uninstanced returns what c's scopes import into a request of its own:
// a delegate's sub-run or a latent call's request (015). Such a request
// has no instances: the data of c's instance reaches it laid over the
// global data, one message per kind, as c read it, so a delegate's calls
// read it with plain references, and the parent's instance ids stay out.
func uninstanced(c *Call) ([]message.Message, error) {
	if c.Instance == "" {
		return c.scoped, nil
	}
	view, err := message.NewLog(c.scoped...)
	if err != nil {
		return nil, err
	}
	src := view.Instance(c.Instance)
	var out []message.Message
	for _, m := range c.scoped {
		if slices.ContainsFunc(out, func(o message.Message) bool { return o.Kind == m.Kind }) {
			continue
		}
		v, err := src.Lookup(m.Kind, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, message.Message{Type: message.TypeData, Kind: m.Kind, Data: v})
	}
	return out, nil
}
