package agent_test

import (
	"encoding/json"
	"slices"
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
