package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
)

// Page 016: the model branches the meta of its context, adding the branch
// to branches, and keeps its identity (domain, path, createdAt, and a
// field of the user's). A strict model writes only the properties the
// meta schema offers, so each of those must be offered, or the branch is
// refused and the identity lost.
func TestStrictMetaBranch(t *testing.T) {
	const (
		cur  = `{"domain":"reactor.ideas.services","path":"/games/321","version":"1.2.3","branches":["main"],"createdAt":"2025-10-26T10:00:00Z","owner":"ada"}`
		next = `{"domain":"reactor.ideas.services","path":"/games/321","version":"1.2.3.feat.1","branches":["main","feat"],"createdAt":"2025-10-26T10:05:00Z","owner":"ada"}`
	)
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		answer := func(req *strict.Request, _ int) (string, error) {
			s, err := strict.Property(req.Schema, "meta")
			if err != nil {
				return "", err
			}
			var offered struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			if err := json.Unmarshal(s, &offered); err != nil {
				return "", err
			}
			// The new meta is the current one moved on: every field the
			// current one has is required, which also keeps them off
			// Claude's small count of optional properties per request.
			slices.Sort(offered.Required)
			if want := []string{"branches", "createdAt", "domain", "owner", "path", "version"}; !slices.Equal(offered.Required, want) {
				t.Errorf("the meta requires %q, want %q", offered.Required, want)
			}
			var meta map[string]json.RawMessage
			if err := json.Unmarshal([]byte(next), &meta); err != nil {
				return "", err
			}
			for k := range meta {
				if _, ok := offered.Properties[k]; !ok {
					delete(meta, k)
				}
			}
			b, err := json.Marshal(map[string]any{"meta": meta, "output": map[string]bool{"done": true}})
			return string(b), err
		}
		p, srv := a.start(t, answer)
		cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxSteps: 2, MaxRepairs: -1, Clock: fixedClock}
		res, err := agent.Run(t.Context(), cfg, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`),
			ctxOf(t, `[{"type":"meta","meta":`+cur+`},{"type":"text","role":"user","text":"Start a branch feat."}]`))
		checkStrictServer(t, srv)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errorTexts(res.Log) {
			t.Errorf("error message: %s", e)
		}
		var got, want any
		if err := json.Unmarshal(res.Solution.Field("meta"), &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(next), &want)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("the solution's meta is %s, want %s", gb, wb)
		}
	})
}

// A meta may hold more than strings: objects, lists of objects, of
// numbers, of lists, nulls. The new meta is the current one moved on, so
// a strict model must be offered each such field in a shape it can write,
// and what it writes there comes back. What no strict schema can say (a
// null alone, an empty object, objects nested deeper than OpenAI allows)
// is kept from the current meta rather than lost, and so is a list that
// holds such a thing.
func TestStrictMetaShapes(t *testing.T) {
	// nested is levels objects, one in another, each with n, level i's
	// from n(i); the innermost has end.
	nested := func(levels int, n func(i int) int) string {
		s := fmt.Sprintf(`{"n":%d,"end":true}`, n(levels))
		for i := levels - 1; i > 0; i-- {
			s = fmt.Sprintf(`{"n":%d,"in":%s}`, n(i), s)
		}
		return s
	}
	level := func(i int) int { return i }
	moved := func(i int) int { return i + 100 }
	// The model moves every field on: one kept from the current meta
	// instead of offered shows. Objects nest as deep as OpenAI allows in
	// "deep9", and three levels deeper in "deep12": its nine outer levels
	// are offered, the rest kept.
	cur := `{"domain":"reactor.ideas.services","path":"/games/321","version":"1.2.3","branches":["main"],"createdAt":"2025-10-26T10:00:00Z",` +
		`"owner":{"name":"ada","team":{"id":7,"lead":true,"tags":["core"]},"reviewer":null,"prefs":{}},` +
		`"reviews":[{"by":"bob","score":4},{"by":"eve","score":5,"note":"ok"}],` +
		`"scores":[1,2.5],"grid":[[1,2],[3]],"mixed":["a",1,true,null],` +
		`"retired":null,"settings":{},"history":[{"v":"1.2.2","note":null}],` +
		`"deep9":` + nested(9, level) + `,"deep12":` + nested(12, level) + `}`
	next := `{"domain":"reactor.ideas.services","path":"/games/321","version":"1.2.4","branches":["main"],"createdAt":"2025-10-26T10:05:00Z",` +
		`"owner":{"name":"bea","team":{"id":8,"lead":false,"tags":["core","ops"]},"reviewer":"kim","prefs":{"dark":true}},` +
		`"reviews":[{"by":"bob","score":4},{"by":"eve","score":5,"note":"ok"},{"by":"kim","score":3}],` +
		`"scores":[1,2.5,4],"grid":[[1,2],[3,4]],"mixed":["b",2,false,null,"c"],` +
		`"retired":"yes","settings":{"dark":true},"history":[{"v":"1.2.3","note":"x"}],` +
		`"deep9":` + nested(9, moved) + `,"deep12":` + nested(12, moved) + `}`
	// What comes back: what the model was offered, moved on; the rest as
	// it was. Nine levels of deep12 moved on, the three inner kept.
	deep12Want := nested(12, func(i int) int {
		if i <= 9 {
			return moved(i)
		}
		return i
	})
	want := `{"domain":"reactor.ideas.services","path":"/games/321","version":"1.2.4","branches":["main"],"createdAt":"2025-10-26T10:05:00Z",` +
		`"owner":{"name":"bea","team":{"id":8,"lead":false,"tags":["core","ops"]},"reviewer":null,"prefs":{}},` +
		`"reviews":[{"by":"bob","score":4},{"by":"eve","score":5,"note":"ok"},{"by":"kim","score":3}],` +
		`"scores":[1,2.5,4],"grid":[[1,2],[3,4]],"mixed":["b",2,false,null,"c"],` +
		`"retired":null,"settings":{},"history":[{"v":"1.2.2","note":null}],` +
		`"deep9":` + nested(9, moved) + `,"deep12":` + deep12Want + `}`
	forEachStrictAdapter(t, func(t *testing.T, a strictAdapter) {
		step := 0
		answer := func(req *strict.Request, _ int) (string, error) {
			step++
			if !req.Strict || req.Field != a.field {
				t.Errorf("the schema went in %q (strict %v), want %q (strict)", req.Field, req.Strict, a.field)
			}
			if !strings.Contains(req.Text(), "## Meta\n"+cur) {
				t.Errorf("the meta is not shown as it is: %s", req.Text())
			}
			s, err := strict.Property(req.Schema, "meta")
			if err != nil {
				return "", err
			}
			var ms any
			if err := json.Unmarshal(s, &ms); err != nil {
				return "", err
			}
			var meta any
			if err := json.Unmarshal([]byte(next), &meta); err != nil {
				return "", err
			}
			written, _ := strictWrite(ms, ms, meta)
			// The first step goes on, so that the second shows what the
			// first sent stays as it was.
			var output any = map[string]bool{"done": true}
			if step == 1 {
				output = nil
			}
			b, err := json.Marshal(map[string]any{"meta": written, "output": output})
			return string(b), err
		}
		p, srv := a.start(t, answer)
		cfg := agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxSteps: 2, MaxRepairs: -1, Clock: fixedClock}
		res, err := agent.Run(t.Context(), cfg, json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"]}`),
			ctxOf(t, `[{"type":"meta","meta":`+cur+`},{"type":"text","role":"user","text":"Bump the version."}]`))
		checkStrictServer(t, srv)
		if err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		if !bytes.Equal(reqs[0].Schema, reqs[1].Schema) {
			t.Errorf("the schema changed from one step to the next:\n%s\n%s", reqs[0].Schema, reqs[1].Schema)
		}
		if first := reqs[0].Text(); !strings.HasPrefix(reqs[1].Text(), first[:len(first)-1]) {
			t.Errorf("the second request does not start with the first:\n%s\n%s", first, reqs[1].Text())
		}
		for _, e := range errorTexts(res.Log) {
			t.Errorf("error message: %s", e)
		}
		var got, w any
		if err := json.Unmarshal(res.Solution.Field("meta"), &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatal(err)
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("the solution's meta is\n%s, want\n%s", gb, wb)
		}
	})
}

// strictWrite returns what a model held to the schema s (a decoded
// schema, whose $refs point into root) writes when it means v: only the
// properties s names, only values of the types it allows. ok is false
// when s admits no value of v's type.
func strictWrite(root, s, v any) (out any, ok bool) {
	o, _ := s.(map[string]any)
	if r, isRef := o["$ref"].(string); isRef {
		target := root
		for _, tok := range strings.Split(strings.TrimPrefix(r, "#/"), "/") {
			m, _ := target.(map[string]any)
			target = m[tok]
		}
		return strictWrite(root, target, v)
	}
	if v == nil && o["nullable"] == true { // Gemini's, beside an anyOf too
		return nil, true
	}
	if alts, isUnion := o["anyOf"].([]any); isUnion {
		// The first alternative that takes v whole, else the first that
		// takes it at all.
		var first any
		found := false
		for _, alt := range alts {
			w, ok := strictWrite(root, alt, v)
			if !ok {
				continue
			}
			if reflect.DeepEqual(w, v) {
				return w, true
			}
			if !found {
				first, found = w, true
			}
		}
		return first, found
	}
	if e, isEnum := o["enum"].([]any); isEnum && !slices.ContainsFunc(e, func(x any) bool { return reflect.DeepEqual(x, v) }) {
		return nil, false
	}
	if c, isConst := o["const"]; isConst && !reflect.DeepEqual(c, v) {
		return nil, false
	}
	var types []string
	switch t := o["type"].(type) {
	case string:
		types = []string{strings.ToLower(t)}
	case []any:
		for _, x := range t {
			name, _ := x.(string)
			types = append(types, strings.ToLower(name))
		}
	}
	if o["nullable"] == true {
		types = append(types, "null")
	}
	switch v := v.(type) {
	case map[string]any:
		if !slices.Contains(types, "object") {
			return nil, false
		}
		props, _ := o["properties"].(map[string]any)
		w := map[string]any{}
		for k, x := range v {
			if ps, named := props[k]; named {
				if wx, ok := strictWrite(root, ps, x); ok {
					w[k] = wx
				}
			}
		}
		return w, true
	case []any:
		if !slices.Contains(types, "array") {
			return nil, false
		}
		w := []any{}
		for _, x := range v {
			if wx, ok := strictWrite(root, o["items"], x); ok {
				w = append(w, wx)
			}
		}
		return w, true
	case string:
		return v, slices.Contains(types, "string")
	case float64:
		return v, slices.Contains(types, "number") || slices.Contains(types, "integer") && v == float64(int64(v))
	case bool:
		return v, slices.Contains(types, "boolean")
	case nil:
		return nil, slices.Contains(types, "null")
	}
	return nil, false
}
