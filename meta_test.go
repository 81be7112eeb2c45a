package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/strict"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
)

func TestCheckBump(t *testing.T) {
	for _, tt := range []struct {
		cur, next string
		ok        bool
	}{
		{"1.2.3", "1.2.4", true},
		{"1.2.3", "1.3.0", true},
		{"1.2.3", "2.0.0", true},
		{"1.2.3", "1.2.3.branch-A.1", true},
		{"1.2.3.branch-A.1", "1.2.3.branch-A.2", true},
		{"1.2.staging.1", "1.2.staging.2", true},
		{"1.2.3.branch-A.1", "1.2.3.branch-A.1.fix.1", true},
		{"1.2.3", "1.2.3", false},
		{"1.2.3", "1.2.5", false},
		{"1.2.3", "1.3.1", false},
		{"1.2.3", "1.2.2", false},
		{"1.2.3", "1.2.3.branch-A.2", false},
		{"1.2.3.branch-A.1", "1.2.4.branch-A.1", false},
		{"1.2.3.branch-A.1", "1.2.3.branch-B.2", false},
		{"1.2.3", "1.2", false},
		{"1.2.3", "1..3", false},
		{"1.2.3", "v1.2.4", false},
		{"1.2.3", "1.2.04", false},
	} {
		err := agent.CheckBump(tt.cur, tt.next)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, agent.ErrVersion) {
			t.Errorf("CheckBump(%s, %s) = %v, want ok=%v", tt.cur, tt.next, err, tt.ok)
		}
	}
}

// A refused bump names the versions that would do, so a model told of it
// can pick one rather than guess again.
func TestCheckBumpNamesTheSuccessors(t *testing.T) {
	for cur, want := range map[string]string{
		"1.0.0":            "the next version is 1.0.1, 1.1.0, 2.0.0 or a branch 1.0.0.NAME.1",
		"1.2.staging.1":    "the next version is 1.2.staging.2 or a branch 1.2.staging.1.NAME.1",
		"1.2.3.branch-A.1": "the next version is 1.2.3.branch-A.2 or a branch 1.2.3.branch-A.1.NAME.1",
	} {
		err := agent.CheckBump(cur, cur+".9")
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("CheckBump(%s, %s.9) = %v, want it to end %q", cur, cur, err, want)
		}
	}
}

func TestRequestChecksTheMetaVersion(t *testing.T) {
	// Page 016: the model gets the current meta and must return the next
	// version; a wrong bump is re-asked with the reason: the schema's
	// pattern, which names the versions that follow, for an unchanged
	// one, and CheckBump's for a branch not listed.
	p := scripted.Solutions(
		`{"meta":{"domain":"reactor.ideas.services","path":"/games/321","version":"1.2.3","branches":["main"],"createdAt":"2025-10-26T10:05:00Z"},"output":{"turn":"O"}}`,
		`{"meta":{"domain":"reactor.ideas.services","path":"/games/321","version":"1.2.3.my-feature.1","branches":["main"],"createdAt":"2025-10-26T10:05:00Z"},"output":{"turn":"O"}}`,
		`{"meta":{"domain":"reactor.ideas.services","path":"/games/321","version":"1.2.4","branches":["main"],"createdAt":"2025-10-26T10:05:00Z"},"output":{"turn":"O"}}`,
	)
	resp, err := agent.Request(context.Background(), agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxRepairs: 3}, json.RawMessage(`{"type":"object"}`), ctxOf(t, `[
		{"type":"meta","meta":{"domain":"reactor.ideas.services","path":"/games/321","version":"1.2.3","branches":["main"],"createdAt":"2025-10-26T10:00:00Z"}},
		{"type":"state","state":{"turn":"X"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(resp.Solutions[0].Field("meta")), `"1.2.4"`) {
		t.Errorf("meta %s", resp.Solutions[0].Field("meta"))
	}
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	first := reqs[1].Messages[len(reqs[1].Messages)-1].Text
	second := reqs[2].Messages[len(reqs[2].Messages)-1].Text
	if !strings.Contains(first, `at /meta/version: "1.2.3" does not match pattern "^(1\\.2\\.4|1\\.3\\.0|2\\.0\\.0|`) || !strings.Contains(second, `branch "my-feature", which is not listed`) {
		t.Errorf("repair prompts:\n%s\n%s", first, second)
	}
	if !strings.Contains(string(reqs[0].Schema), `"meta"`) || !strings.Contains(reqs[0].Messages[0].Text, "## Meta") {
		t.Errorf("meta not composed or rendered")
	}
	// Compact, as data blocks: every later request repeats it.
	if want := "## Meta\n" + `{"domain":"reactor.ideas.services","path":"/games/321","version":"1.2.3","branches":["main"],"createdAt":"2025-10-26T10:00:00Z"}`; !strings.Contains(reqs[0].Messages[0].Text, want) {
		t.Errorf("meta rendered as\n%s\nwant %s", reqs[0].Messages[0].Text, want)
	}
}

// TestMetaAppendedMidRun: a meta message an activity appends mid-run
// replaces the version check of the meta before it; the next answer
// updates the new meta.
func TestMetaAppendedMidRun(t *testing.T) {
	reg := echoReg()
	reg.Tool("release", json.RawMessage(`{"type":"object","properties":{}}`))
	reg.Activity("release", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return &agent.Result{Messages: []message.Message{{Type: message.TypeMeta, Meta: json.RawMessage(`{"path":"/x","version":"1.0.1"}`)}}}, nil
	}))
	msgs := ctxOf(t, `[{"type":"meta","meta":{"path":"/x","version":"1.0.0"}},{"type":"tool","tool":"release"},{"type":"text","text":"go"}]`)
	p := scripted.Solutions(
		`{"meta":{"path":"/x","version":"1.0.1"},"calls":[{"_tool":"release","_outputPath":"†state.r"}],"output":null}`,
		`{"meta":{"path":"/x","version":"1.0.2"},"calls":[],"output":{"done":true}}`,
		`{"meta":{"path":"/x","version":"1.0.1"},"calls":[],"output":{"done":true}}`)
	res, err := agent.Run(context.Background(), agent.Config{Provider: p, Registry: reg, MaxSteps: 3}, anyOut, msgs)
	if err != nil {
		for _, m := range res.Log.Messages() {
			if m.Type == message.TypeError {
				t.Log(m.Error)
			}
		}
		t.Fatal(err)
	}
}

// TestMetaKeepsWhatItsSchemaLeavesOut: the parts of the current meta the
// meta schema does not offer (a null, an empty object, a field whose
// schema would be too long) come back in the solution's meta as they
// were, unless the model wrote them (a model not held to the schema
// may); into an object it wrote, the keys it lacks.
func TestMetaKeepsWhatItsSchemaLeavesOut(t *testing.T) {
	var big strings.Builder
	big.WriteString(`{"k0":"v"`)
	for i := 1; i < 2000; i++ {
		fmt.Fprintf(&big, `,"k%d":"v"`, i)
	}
	big.WriteString("}")
	cur := `{"version":"1.0.0","note":null,"owner":{"name":"ada","extra":{}},"big":` + big.String() + `}`
	for _, tt := range []struct {
		name, meta, want string
	}{
		{"left out", `{"version":"1.0.1","owner":{"name":"bea"}}`,
			`{"version":"1.0.1","owner":{"name":"bea","extra":{}},"big":` + big.String() + `,"note":null}`},
		{"written", `{"version":"1.0.1","note":"hi","owner":{"name":"bea","extra":{"a":1}},"big":"none"}`,
			`{"version":"1.0.1","note":"hi","owner":{"name":"bea","extra":{"a":1}},"big":"none"}`},
		// An object the model wrote gets the keys of the current one it
		// lacks: the new meta is the current one moved on.
		{"merged", `{"version":"1.0.1","owner":{"name":"bea"},"big":{"k0":"w"}}`,
			`{"version":"1.0.1","note":null,"owner":{"name":"bea","extra":{}},"big":` + strings.Replace(big.String(), `"k0":"v"`, `"k0":"w"`, 1) + `}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := scripted.Solutions(`{"meta":` + tt.meta + `,"output":{}}`)
			resp, err := agent.Request(t.Context(), agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxRepairs: -1},
				json.RawMessage(`{"type":"object"}`), ctxOf(t, `[{"type":"meta","meta":`+cur+`}]`))
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(resp.Solutions[0].Field("meta"), &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the solution's meta is %s, want %s", resp.Solutions[0].Field("meta"), tt.want)
			}
			meta, err := strict.Property(p.Requests()[0].Schema, "meta")
			if err != nil {
				t.Fatal(err)
			}
			for _, left := range []string{`"note"`, `"extra"`, `"big"`, `"k0"`} {
				if strings.Contains(string(meta), left) {
					t.Errorf("the meta schema offers %s: %s", left, meta)
				}
			}
			if !strings.Contains(string(meta), `"owner":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`) {
				t.Errorf("the meta schema does not offer owner's name: %s", meta)
			}
		})
	}
}

// A strict provider's model writes only what the schema allows: the
// meta's version is offered as a pattern that admits the successors of
// the current version, which CheckBump takes, and nothing CheckBump
// refuses, so a constrained model cannot write a version the run would
// send back again and again.
func TestMetaVersionPattern(t *testing.T) {
	for cur, cands := range map[string][]string{
		"1.2.3":          {"1.2.4", "1.3.0", "2.0.0", "1.2.3.feat.1", "1.2.3.b-2.1", "1.2.3", "1.2.5", "1.3.1", "1.2.3.feat.2", "1.2.3.7.1", "1.2.4.0", "1.2.3.f.e.1", "1x2.4", "1.2.3.feat.1 ", "01.2.4", "1.2.3..1"},
		"1.2.staging.1":  {"1.2.staging.2", "1.2.staging.1.x.1", "1.2.staging.3", "1.3.staging.1", "1.2.staging.1.1"},
		"2":              {"3", "2.a.1", "2.0", "4", "2.1"},
		"1.0.0.a+b(c).1": {"1.0.0.a+b(c).2", "1.0.0.aab(c).2", "1.0.0.a+b(c).1.x.1"},
	} {
		p := scripted.Solutions(`{"meta":{"version":"x"},"output":{}}`)
		_, _ = agent.Request(t.Context(), agent.Config{Provider: p, Registry: agent.NewRegistry(), MaxRepairs: -1}, json.RawMessage(`{"type":"object"}`),
			ctxOf(t, `[{"type":"meta","meta":{"version":"`+cur+`"}},{"type":"text","text":"go on"}]`))
		var composed struct {
			Properties struct {
				Meta struct {
					Properties struct {
						Version struct {
							Pattern     string `json:"pattern"`
							Description string `json:"description"`
						} `json:"version"`
					} `json:"properties"`
				} `json:"meta"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(p.Requests()[0].Schema, &composed); err != nil {
			t.Fatal(err)
		}
		v := composed.Properties.Meta.Properties.Version
		re, err := regexp.Compile(v.Pattern)
		if v.Pattern == "" || err != nil {
			t.Fatalf("%s: version pattern %q: %v", cur, v.Pattern, err)
		}
		if !strings.Contains(v.Description, cur) {
			t.Errorf("%s: the description does not name the current version: %s", cur, v.Description)
		}
		for _, next := range cands {
			if matched, ok := re.MatchString(next), agent.CheckBump(cur, next) == nil; matched != ok {
				t.Errorf("%s → %q: pattern matches %v, CheckBump takes it %v", cur, next, matched, ok)
			}
		}
	}
}
