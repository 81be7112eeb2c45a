package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/openaitest"
	"github.com/augceo/agent/internal/pgtest"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/sqlite"
)

// batch is an Idea whose plan doubles each input's n and then labels it:
// label writes to a branch, "†state.big || †state.small".
const batch = `{"schema":{"type":"object"},"context":[
	{"type":"tool","tool":{"double":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]},
		"label":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}},
	{"type":"plan","plan":[
		{"_tool":"double","n":"†input.n","_outputPath":"†state.doubled"},
		{"_tool":"label","n":"†state.doubled.n","_outputPath":"†state.big || †state.small"}]}]}`

// batchEnv registers double and label; label fails for n = 14 when fail
// is set, and onCall sees every call.
func batchEnv(fail bool, onCall func(*agent.Call)) (*agent.Registry, *atomic.Int64) {
	reg := agent.NewRegistry()
	var calls atomic.Int64
	reg.Activity("double", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		calls.Add(1)
		if onCall != nil {
			onCall(c)
		}
		var p struct{ N int }
		_ = json.Unmarshal(c.Args(), &p)
		return agent.Value(map[string]int{"n": 2 * p.N})
	}))
	reg.Activity("label", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		calls.Add(1)
		var p struct{ N int }
		_ = json.Unmarshal(c.Args(), &p)
		if fail && p.N == 14 {
			return nil, os.ErrPermission
		}
		r, err := agent.Value(map[string]int{"n": p.N})
		if p.N < 10 {
			r.Branch = message.Failure
		}
		return r, err
	}))
	return reg, &calls
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// acts runs a command with a registry and returns the exit status and
// what it printed.
func acts(ctx context.Context, reg *agent.Registry, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(ctx, args, Env{Registry: reg, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Providers: openaiProviders})
	return code, stdout.String(), stderr.String()
}

func summaryOf(t *testing.T, out string) summary {
	t.Helper()
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("summary %q: %v", out, err)
	}
	return s
}

func TestRunPlanOffline(t *testing.T) {
	ctx := context.Background()
	idea := writeFile(t, "batch.json", batch)
	db := filepath.Join(t.TempDir(), "runs.db")
	reg, _ := batchEnv(false, nil)
	code, out, errOut := acts(ctx, reg, "run", idea, "--input", `[{"n":1},{"n":7},{"_instance":"x","n":3}]`, "--store", db, "--id", "r1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	s := summaryOf(t, out)
	if s.Run != "r1" || s.Status != "done" || s.Calls != 6 || s.Failed != 0 || s.Messages != 2+3+6 {
		t.Errorf("summary %+v", s)
	}

	code, out, _ = acts(ctx, reg, "runs", "--store", db)
	if code != 0 || !strings.Contains(out, "RUN") || !strings.Contains(out, "r1") || !strings.Contains(out, "done") {
		t.Errorf("runs: %d %q", code, out)
	}
	code, out, _ = acts(ctx, reg, "runs", "--store", db, "--json")
	var listed struct{ ID, Kind, Status, Idea string }
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || listed.ID != "r1" || listed.Kind != "plan" || listed.Idea != idea {
		t.Errorf("runs --json: %d %q", code, out)
	}

	code, out, _ = acts(ctx, reg, "log", "r1", "--store", db)
	if code != 0 {
		t.Errorf("log: exit %d", code)
	}
	for _, want := range []string{
		"run r1  plan  done",
		"input[x] {\"n\":3}",
		// References are shown resolved: label of instance x reads 6.
		`label[x] {"_tool":"label","n":6,`,
		"→ †state.big || †state.small",
		"state[x] ← †state.small {\"small\":{\"n\":6}}",
		"state[2] ← †state.big {\"big\":{\"n\":14}}",
		"end",
		"11 messages, 6 calls started, 0 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "cost") {
		t.Errorf("log with no price list shows a cost:\n%s", out)
	}
	code, out, _ = acts(ctx, reg, "log", "r1", "--store", db, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) < 2 || !strings.Contains(lines[0], `"id":"r1"`) || !strings.Contains(lines[len(lines)-1], `"type":"end"`) {
		t.Errorf("log --json: %d %q", code, out)
	}

	// The id is taken.
	if code, _, errOut := acts(ctx, reg, "run", idea, "--store", db, "--id", "r1"); code != 1 || !strings.HasSuffix(errOut, "already exists in "+db+"; continue it with: acts resume r1 --store "+db+"\n") {
		t.Errorf("run with a taken id: %d %q", code, errOut)
	}
}

func TestRunExitCodes(t *testing.T) {
	ctx := context.Background()
	idea := writeFile(t, "batch.json", batch)
	db := filepath.Join(t.TempDir(), "runs.db")
	reg, _ := batchEnv(true, nil)
	code, out, errOut := acts(ctx, reg, "run", idea, "--input", `[{"n":1},{"n":7}]`, "--store", db, "--id", "f", "--json")
	if code != ExitCallsFailed || !strings.Contains(errOut, "1 of 4 calls failed; see acts log f") {
		t.Errorf("failed call: exit %d, %q", code, errOut)
	}
	if s := summaryOf(t, out); s.Failed != 1 || s.Status != "done" {
		t.Errorf("summary %+v", s)
	}
	if _, out, _ := acts(ctx, reg, "log", "f", "--store", db); !strings.Contains(out, "failed: runtime error in label: permission denied") {
		t.Errorf("log: %s", out)
	}

	unknown := writeFile(t, "unknown.json", `{"schema":{},"context":[{"type":"plan","plan":[{"_tool":"nope","_outputPath":"†state.x"}]}]}`)
	code, _, errOut = acts(ctx, reg, "run", unknown, "--store", db, "--id", "u")
	if code != 1 || !strings.Contains(errOut, "nope") {
		t.Errorf("unknown tool: exit %d, %q", code, errOut)
	}
	if _, out, _ := acts(ctx, reg, "runs", "--store", db, "--json"); !strings.Contains(out, `"id":"u","kind":"plan","status":"failed"`) {
		t.Errorf("the failed run is not recorded as failed: %s", out)
	}

	noPlan := writeFile(t, "noplan.json", `{"schema":{"type":"object"},"context":[{"type":"text","text":"hi"}]}`)
	t.Setenv("ACTS_MODEL", "")
	if code, _, errOut := acts(ctx, reg, "run", noPlan, "--store", db); code != 2 || !strings.Contains(errOut, "needs --model") {
		t.Errorf("no plan, no model: exit %d, %q", code, errOut)
	}
	latent := writeFile(t, "latent.json", `{"schema":{"type":"object"},"context":[{"type":"tool","tool":{"classify":{"type":"object","properties":{"_output":{"type":"string"}}}}},`+
		`{"type":"plan","plan":[{"_tool":"classify","_outputPath":"†state.label"}]}]}`)
	if code, _, errOut := acts(ctx, reg, "run", latent, "--store", "memory:", "--input", `[{"a":1},{"a":2}]`); code != 1 ||
		!strings.Contains(errOut, "call 0 (classify) instances 1, 2: no provider") || !strings.Contains(errOut, "(give --model provider:model, or set ACTS_MODEL)") {
		t.Errorf("a latent plan, no model: exit %d, %q", code, errOut)
	}
	for _, args := range [][]string{{"run"}, {"resume"}, {"log"}, {"fork", "x"}, {"runs", "x"}} {
		if code, _, _ := acts(ctx, reg, append(args, "--store", db)...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, errOut := acts(ctx, reg, "resume", "nobody", "--store", db); code != 1 || !strings.Contains(errOut, "run not found in "+db) {
		t.Errorf("resume of an unknown run: %d %q", code, errOut)
	}
	if code, _, errOut := acts(ctx, reg, "run", idea, "--input", "{nope", "--store", db); code != 1 || !strings.Contains(errOut, "--input: line 1: not valid JSON") {
		t.Errorf("bad input: %d %q", code, errOut)
	}
}

func TestRunInterruptedAndResumed(t *testing.T) {
	idea := writeFile(t, "batch.json", batch)
	db := filepath.Join(t.TempDir(), "runs.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int64
	reg, calls := batchEnv(false, func(*agent.Call) {
		if n.Add(1) == 3 {
			cancel() // Ctrl-C
		}
	})
	var in []string
	for i := range 20 {
		in = append(in, `{"n":`+string(rune('0'+i%10))+`}`)
	}
	input := "[" + strings.Join(in, ",") + "]"
	code, out, errOut := acts(ctx, reg, "run", idea, "--input", input, "--store", db, "--id", "c", "--json", "--concurrency", "1")
	if code != ExitInterrupted || !strings.Contains(errOut, "continue it with acts resume c") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	if s := summaryOf(t, out); s.Status != "interrupted" {
		t.Errorf("summary %+v", s)
	}
	if _, out, _ := acts(context.Background(), reg, "runs", "--store", db, "--json"); !strings.Contains(out, `"status":"interrupted"`) {
		t.Errorf("runs: %s", out)
	}
	before := calls.Load()
	code, out, errOut = acts(context.Background(), reg, "resume", "c", "--store", db, "--json")
	if code != 0 {
		t.Fatalf("resume: exit %d, %q", code, errOut)
	}
	s := summaryOf(t, out)
	if s.Status != "done" || s.Messages != 2+20+40 {
		t.Errorf("summary %+v", s)
	}
	// Calls that finished before Ctrl-C did not run again: 40 in all,
	// plus those cancelled while running, which fail and are reported.
	if total := calls.Load(); total > 40+before {
		t.Errorf("%d calls ran", total)
	}
}

// TestRunInterruptedCallsNotFailed interrupts a run while a call runs: the
// call cut short did not fail, in the summary as in the journal, since
// resume runs it again (or reports it).
func TestRunInterruptedCallsNotFailed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := agent.NewRegistry()
	reg.Activity("wait", agent.ActivityFunc(func(c context.Context, _ *agent.Call) (*agent.Result, error) {
		cancel() // Ctrl-C while the call runs
		<-c.Done()
		return nil, c.Err()
	}))
	idea := writeFile(t, "wait.json", `{"schema":{},"context":[{"type":"tool","tool":{"wait":{"type":"object"}}},
		{"type":"plan","plan":[{"_tool":"wait","_outputPath":"†state.w"}]}]}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	code, out, errOut := acts(ctx, reg, "run", idea, "--store", db, "--id", "w", "--json")
	if code != ExitInterrupted {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	if s := summaryOf(t, out); s.Status != "interrupted" || s.Calls != 0 || s.Failed != 0 {
		t.Errorf("summary %+v, want no call ended", s)
	}
}

func TestFork(t *testing.T) {
	ctx := context.Background()
	idea := writeFile(t, "batch.json", batch)
	db := filepath.Join(t.TempDir(), "runs.db")
	reg, calls := batchEnv(false, nil)
	if code, _, errOut := acts(ctx, reg, "run", idea, "--input", `[{"n":1},{"n":7}]`, "--store", db, "--id", "p"); code != 0 {
		t.Fatal(errOut)
	}
	// Messages 0-1 are the tools and the plan, 2-3 the inputs, 4 the first
	// output: the fork keeps one output and runs the rest.
	code, out, errOut := acts(ctx, reg, "fork", "p", "--at", "4", "--id", "b", "--store", db)
	if code != 0 || out != "run b: forked from p at message 4; continue it with: acts resume b --store "+db+"\n" {
		t.Fatalf("fork: %d %q %q", code, out, errOut)
	}
	// --json: one object, and an id of the store's choosing.
	code, out, errOut = acts(ctx, reg, "fork", "p", "--at", "3", "--json", "--store", db)
	var forked struct {
		Run, Parent string
		At          int
	}
	if err := json.Unmarshal([]byte(out), &forked); code != 0 || err != nil || forked.Run == "" || forked.Run == "p" || forked.Parent != "p" || forked.At != 3 {
		t.Fatalf("fork --json: %d %q %q: %+v, %v", code, out, errOut, forked, err)
	}
	if _, out, _ := acts(ctx, reg, "runs", "--store", db, "--json"); !strings.Contains(out, `{"id":"`+forked.Run+`","kind":"plan","status":"interrupted"`) {
		t.Errorf("the run fork --json named is not in the store: %s", out)
	}
	calls.Store(0)
	code, out, errOut = acts(ctx, reg, "resume", "b", "--store", db, "--json")
	if code != 0 {
		t.Fatalf("resume: %d %q", code, errOut)
	}
	if s := summaryOf(t, out); s.Messages != 8 || calls.Load() != 3 {
		t.Errorf("summary %+v, %d calls ran", s, calls.Load())
	}
	if _, out, _ := acts(ctx, reg, "log", "b", "--store", db); !strings.Contains(out, "forked from p") {
		t.Errorf("log: %s", out)
	}
	if code, _, errOut := acts(ctx, reg, "fork", "p", "--at", "99", "--store", db); code != 1 || !strings.Contains(errOut, "fork p") {
		t.Errorf("fork past the end: %d %q", code, errOut)
	}
	for _, args := range [][]string{{"p"}, {"p", "--at", "-1"}, {"--at", "2"}} {
		if code, _, errOut := acts(ctx, reg, append([]string{"fork", "--store", db}, args...)...); code != 2 || !strings.Contains(errOut, "acts: usage: ") {
			t.Errorf("fork %q: %d %q", args, code, errOut)
		}
	}
}

func TestRunLoop(t *testing.T) {
	// The loop's step calls lookup, a latent tool: its own request gets
	// the lookup's result.
	srv := openaitest.Server(t, func(body []byte) string {
		if strings.Contains(string(body), "Carry out the tool lookup") {
			return `{"output":{"capital":"Paris"}}`
		}
		return `{"calls":[{"_tool":"lookup","q":"France","_outputPath":"†state.found"}],"output":{"capital":"Paris"}}`
	})
	t.Setenv("OPENAI_API_KEY", "test")
	idea := writeIdea(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	code, out, errOut := acts(context.Background(), agent.NewRegistry(), "run", idea, "--model", "openai:gpt-test", "--base-url", srv.URL, "--store", db, "--id", "l", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	s := summaryOf(t, out)
	if s.Status != "done" || string(s.Output) != `{"capital":"Paris"}` || s.Steps != 1 || s.Usage.Total() == 0 {
		t.Errorf("summary %+v", s)
	}
	_, out, _ = acts(context.Background(), agent.NewRegistry(), "log", "l", "--store", db)
	if !strings.Contains(out, "run l  loop  done") || !strings.Contains(out, "model openai:gpt-test") || strings.Contains(out, "cost") ||
		!strings.Contains(out, "(hit rate ") ||
		!strings.Contains(out, "── step 1\n       call 1.0 started: lookup {\"_tool\":\"lookup\",\"q\":\"France\"") || !strings.Contains(out, "call 1.0 done") {
		t.Errorf("log:\n%s", out)
	}
}

func TestRunRenderingFlag(t *testing.T) {
	idea := writeIdea(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	code, _, errOut := acts(context.Background(), agent.NewRegistry(), "run", idea, "--model", "openai:gpt-test", "--store", db, "--rendering", "fancy")
	if code != 2 || !strings.Contains(errOut, `--rendering: unknown rendering "fancy"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

func TestRunCacheRetentionFlag(t *testing.T) {
	// --cache-retention is saved with the run, which its resumes and
	// continues then keep; an unknown one is a usage error.
	srv := openaitest.Server(t, func([]byte) string { return `{"calls":[],"output":{"capital":"Paris"}}` })
	t.Setenv("OPENAI_API_KEY", "test")
	idea := writeIdea(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	code, _, errOut := acts(context.Background(), agent.NewRegistry(), "run", idea, "--model", "openai:gpt-test", "--store", db, "--cache-retention", "forever")
	if code != 2 || !strings.Contains(errOut, `--cache-retention: unknown cache retention "forever"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
	code, _, errOut = acts(context.Background(), agent.NewRegistry(), "run", idea, "--model", "openai:gpt-test", "--base-url", srv.URL, "--store", db, "--id", "r", "--cache-retention", "long")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.Load(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	if saved, err := agent.SavedSettings(run); err != nil || saved == nil || saved.CacheRetention != provider.CacheLong {
		t.Errorf("saved settings %+v, %v; want the long retention", saved, err)
	}
}

func TestRunChecksBeforeSaving(t *testing.T) {
	// A command that fails its checks leaves no run behind.
	idea := writeIdea(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	for _, args := range [][]string{
		{"--model", "openai:gpt-test", "--rendering", "fancy"},
		{"--model", "openai:gpt-test", "--cache-retention", "1h"},
		{"--lease", "0s", "--model", "openai:gpt-test"},
		{}, // a loop with no model
		{"--model", "nonsense"},
		{"--input", `[{"_instance":"1"},{"a":1}]`},
	} {
		code, _, errOut := acts(context.Background(), agent.NewRegistry(), append([]string{"run", idea, "--store", db, "--id", "bad"}, args...)...)
		if code == 0 {
			t.Errorf("%q: exit 0", args)
		}
		if _, out, _ := acts(context.Background(), agent.NewRegistry(), "runs", "--store", db, "--json"); strings.Contains(out, `"bad"`) {
			t.Fatalf("%q (%s) left a run: %s", args, errOut, out)
		}
	}
}

func TestResumeUsesSavedEndpoint(t *testing.T) {
	// A run made against a local server, whose second request fails, is
	// resumed with no flags: it goes to the same server, and says so.
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	var fail atomic.Bool
	var requests atomic.Int64
	var answered atomic.Int64
	inner := openaitest.Server(t, func(body []byte) string {
		if answered.Add(1) > 1 {
			return `{"calls":[],"output":{"capital":"Paris"}}`
		}
		return `{"calls":[{"_tool":"lookup","q":"France","_outputPath":"†state.found"}],"output":null}`
	})
	proxy := httputil.NewSingleHostReverseProxy(must(url.Parse(inner.URL)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if fail.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"model overloaded","type":"invalid_request_error"}}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	reg := agent.NewRegistry()
	reg.Activity("lookup", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		fail.Store(true) // the next request fails
		return agent.Value("Paris")
	}))
	idea := writeIdea(t)
	db := filepath.Join(t.TempDir(), "runs.db")
	code, _, errOut := acts(context.Background(), reg, "run", idea, "--model", "local:m1", "--base-url", srv.URL+"/v1", "--store", db, "--id", "e", "--json")
	if code != 1 || !strings.Contains(errOut, "model overloaded") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	fail.Store(false)
	// The environment now names another server and another model: the
	// resume still calls the run's own.
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("ACTS_MODEL", "openai:gpt-other")
	before := requests.Load()
	code, out, errOut := acts(context.Background(), reg, "resume", "e", "--store", db, "--json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "resuming run e: local at "+srv.URL+"/v1, model m1") {
		t.Errorf("resume did not say where it goes: %s", errOut)
	}
	if requests.Load() == before || summaryOf(t, out).Status != "done" {
		t.Errorf("the resume did not call the run's server: %d requests, %s", requests.Load()-before, out)
	}
	_, out, _ = acts(context.Background(), reg, "log", "e", "--store", db)
	if !strings.Contains(out, "stopped: failed") || !strings.Contains(out, `"capital": "Paris"`) {
		t.Errorf("log:\n%s", out)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestReadInput(t *testing.T) {
	jsonl := writeFile(t, "in.jsonl", "{\"a\":1}\n\n{\"_instance\":\"k\",\"a\":2}\n")
	one := writeFile(t, "one.jsonl", `{"a":1}`)
	empty := writeFile(t, "empty.jsonl", "\n")
	for _, tt := range []struct {
		spec string
		want []string // instance=data
		err  string
	}{
		{"", nil, ""},
		{`{"a":1}`, []string{`={"a":1}`}, ""},
		{`[{"a":1},{"a":2}]`, []string{`1={"a":1}`, `2={"a":2}`}, ""},
		{`[{"_instance":"x","a":1,"b":[2]}]`, []string{`x={"a":1,"b":[2]}`}, ""},
		{"@" + jsonl, []string{`1={"a":1}`, `k={"a":2}`}, ""},
		{"@" + one, []string{`1={"a":1}`}, ""},
		{`{"a":1}` + "\n" + `{"a":2}`, []string{`1={"a":1}`, `2={"a":2}`}, ""},
		{`[1,`, nil, "--input: unexpected end of JSON input"},
		{`{"a":1}` + "\nnope", nil, "--input: line 2: not valid JSON"},
		{`[{"_instance":3}]`, nil, "--input: element 1: _instance must be a string, not a number"},
		{`[{"_instance":null,"a":1}]`, nil, "--input: element 1: _instance must be a string, not null"},
		{`[{"a":1},{"_instance":"","a":2}]`, nil, "--input: element 2: _instance must not be empty"},
		{"{\"a\":1}\n[2]", nil, "--input: line 2: an instanced input must be a JSON object, not an array"},
		{`[{"a":1},"b"]`, nil, `--input: element 2: an instanced input must be a JSON object, not a string`},
		{`[]`, nil, "--input: no inputs"},
		{"@" + empty, nil, empty + ": no inputs"},
		{`[{"_instance":"2","a":1},{"a":2}]`, nil, `--input: element 1 and element 2 are both instance "2"`},
		{"{\"_instance\":\"k\",\"a\":1}\n\n{\"_instance\":\"k\",\"a\":2}", nil, `--input: line 1 and line 3 are both instance "k"`},
		{"@/nonexistent/x.json", nil, "--input @/nonexistent/x.json: open /nonexistent/x.json: no such file"},
		{"@-", []string{`1={"a":1}`, `k={"a":2}`}, ""},
	} {
		msgs, err := readInput(strings.NewReader(`{"a":1}`+"\n"+`{"_instance":"k","a":2}`), tt.spec, nil)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.spec, err)
			continue
		}
		var got []string
		for _, m := range msgs {
			if m.Kind != "input" || m.Type != message.TypeData {
				t.Errorf("%q: message %+v", tt.spec, m)
			}
			got = append(got, m.Instance+"="+string(m.Data))
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%q: got %q, want %q", tt.spec, got, tt.want)
		}
	}
}

// TestRunPostgres runs, lists, traces and resumes through a postgres://
// store URL.
func TestRunPostgres(t *testing.T) {
	db := pgtest.Schema(t)
	ctx := context.Background()
	idea := writeFile(t, "batch.json", batch)
	reg, _ := batchEnv(false, nil)
	code, out, errOut := acts(ctx, reg, "run", idea, "--input", `[{"n":1},{"n":7}]`, "--store", db, "--id", "pg", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if s := summaryOf(t, out); s.Status != "done" || s.Calls != 4 {
		t.Errorf("summary %+v", s)
	}
	if _, out, _ := acts(ctx, reg, "runs", "--store", db); !strings.Contains(out, "pg") {
		t.Errorf("runs: %s", out)
	}
	if _, out, _ := acts(ctx, reg, "log", "pg", "--store", db); !strings.Contains(out, "state[2] ← †state.big") {
		t.Errorf("log: %s", out)
	}
	if code, _, errOut := acts(ctx, reg, "resume", "pg", "--store", db); code != 0 {
		t.Errorf("resume of a finished run: %d %s", code, errOut)
	}
}

func TestProgress(t *testing.T) {
	idea := writeFile(t, "batch.json", batch)
	reg, _ := batchEnv(false, nil)
	db := filepath.Join(t.TempDir(), "runs.db")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"run", idea, "--input", `[{"n":1},{"n":2},{"n":3}]`, "--store", db, "--progress", "always"},
		Env{Registry: reg, Stdout: &stdout, Stderr: &stderr})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	// The last frame is drawn whatever the time since the one before.
	if !strings.Contains(stderr.String(), "\r[==============================] 6/6 calls 100%  0 failed") || !strings.HasSuffix(stderr.String(), "\n") {
		t.Errorf("progress %q", stderr.String())
	}
	// Not a terminal: no bar by default.
	stderr.Reset()
	Main(context.Background(), []string{"run", idea, "--input", `[{"n":1}]`, "--store", db}, Env{Registry: reg, Stdout: &stdout, Stderr: &stderr})
	if stderr.Len() != 0 {
		t.Errorf("a bar went to a buffer: %q", stderr.String())
	}
}

// TestRunMemoryStore: a run in the memory store is gone when the command
// ends, so its summary offers no acts log or acts resume that cannot work.
func TestRunMemoryStore(t *testing.T) {
	for _, fail := range []bool{false, true} {
		reg, _ := batchEnv(fail, nil)
		code, out, errOut := acts(t.Context(), reg, "run", writeFile(t, "batch.json", batch), "--input", `[{"n":1},{"n":7}]`, "--store", "memory:")
		if !strings.Contains(out, "trace: none kept (--store memory:)") || strings.Contains(out+errOut, "acts log") || strings.Contains(out+errOut, "acts resume") {
			t.Errorf("fail %v: exit %d\nstdout %s\nstderr %s", fail, code, out, errOut)
		}
		if fail && (code != ExitCallsFailed || !strings.Contains(errOut, "calls failed")) {
			t.Errorf("failing calls: exit %d, stderr %q", code, errOut)
		}
	}
}

func TestStoreName(t *testing.T) {
	for url, want := range map[string]string{
		"acts.db":                            "acts.db",
		"memory:":                            "memory:",
		"postgres://app:secret@db:5432/acts": "postgres://app:xxxxx@db:5432/acts",
		"postgresql://app@db/acts?sslmode=disable": "postgresql://app@db/acts?sslmode=disable",
	} {
		if got := storeName(url); got != want {
			t.Errorf("storeName(%q) = %q, want %q", url, got, want)
		}
	}
}

// TestRunFailedBeforeAnything: a run that fails before any call or
// request (a plan that does not validate, a latent call with no model)
// says so, and its summary has no counts of what never happened.
func TestRunFailedBeforeAnything(t *testing.T) {
	t.Setenv("ACTS_MODEL", "")
	unknown := writeFile(t, "unknown.json", `{"schema":{},"context":[{"type":"plan","plan":[{"_tool":"nope","_outputPath":"†state.x"}]}]}`)
	latent := writeFile(t, "latent.json", `{"schema":{"type":"object"},"context":[{"type":"tool","tool":{"classify":{"type":"object","properties":{"_output":{"type":"string"}}}}},`+
		`{"type":"plan","plan":[{"_tool":"classify","_outputPath":"†state.label"}]}]}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	for _, tt := range []struct {
		name, idea, err string
	}{
		{name: "invalid plan", idea: unknown, err: `unknown tool "nope"`},
		{name: "no model", idea: latent, err: "no provider"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := strings.ReplaceAll(tt.name, " ", "-")
			code, out, errOut := acts(t.Context(), agent.NewRegistry(), "run", tt.idea, "--store", db, "--id", id)
			if code != 1 || !strings.Contains(errOut, tt.err) {
				t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, tt.err)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 2 || !regexp.MustCompile(`^run `+id+`: failed in [0-9.]+s, before any call or request$`).MatchString(lines[0]) ||
				lines[1] != "  trace: acts log "+id+" --store "+db {
				t.Errorf("summary:\n%s", out)
			}
			code, out, _ = acts(t.Context(), agent.NewRegistry(), "run", tt.idea, "--store", db, "--id", id+"-json", "--json")
			var s map[string]any
			if err := json.Unmarshal([]byte(out), &s); code != 1 || err != nil {
				t.Fatalf("--json: exit %d, %q: %v", code, out, err)
			}
			if _, ok := s["messages"]; ok || s["status"] != "failed" || !strings.Contains(fmt.Sprint(s["error"]), tt.err) {
				t.Errorf("--json summary %s", out)
			}
		})
	}
}

// TestRunRefusedBeforeCreated: a loop whose first request cannot be made
// sends nothing and creates no run, so it prints no summary or trace. The
// error is the Idea's, and names its file.
func TestRunRefusedBeforeCreated(t *testing.T) {
	srv := openaitest.Server(t, func([]byte) string {
		t.Error("a request was sent")
		return `{"output":{}}`
	})
	db := filepath.Join(t.TempDir(), "runs.db")
	for _, tt := range []struct{ name, idea, want string }{
		{"byname.json", `{"schema":{"type":"object"},"context":[{"type":"tool","tool":"weather"},{"type":"text","text":"hi"}]}`, `unknown tool "weather"`},
		{"type.json", `{"schema":{"type":"object"},"context":[{"type":"txt","text":"hi"}]}`, `message 0 (txt): no handler for message type "txt"`},
		{"schema.json", `{"schema":{"type":"objekt"},"context":[{"type":"text","text":"hi"}]}`, `output schema`},
	} {
		idea := writeFile(t, tt.name, tt.idea)
		for _, json := range []bool{false, true} {
			args := []string{"run", idea, "--store", db, "--id", "r", "--model", "local:m1", "--base-url", srv.URL + "/v1"}
			if json {
				args = append(args, "--json")
			}
			code, out, errOut := acts(t.Context(), agent.NewRegistry(), args...)
			if code != 1 || out != "" || !strings.HasPrefix(errOut, "acts: "+idea+": ") || !strings.Contains(errOut, tt.want) {
				t.Errorf("%s --json %v: exit %d, stdout %q, stderr %q; want exit 1, %q after the file's name", tt.name, json, code, out, errOut, tt.want)
			}
		}
	}
	if _, out, _ := acts(t.Context(), agent.NewRegistry(), "runs", "--store", db, "--json"); strings.Contains(out, `"r"`) {
		t.Errorf("a run was created: %s", out)
	}
}

// TestRunMaxSteps: --max-steps limits a loop run's steps, and a run that
// hit the limit is resumed with a higher one, which the error says how
// to give; without it the resume stops where the run did.
func TestRunMaxSteps(t *testing.T) {
	var requests atomic.Int64
	srv := openaitest.Server(t, func([]byte) string {
		if requests.Add(1) <= 3 {
			return `{"calls":[{"_tool":"note","_output":"noted"}],"output":null}`
		}
		return `{"calls":[],"output":{"capital":"Paris"}}`
	})
	idea := writeFile(t, "notes.json", `{"schema":{"type":"object","properties":{"capital":{"type":"string"}},"required":["capital"]},
		"context":[{"type":"tool","tool":{"note":{"type":"object","properties":{"_output":{"type":"string"}}}}},{"type":"text","text":"France?"}]}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	ctx := t.Context()
	reg := agent.NewRegistry()
	code, out, errOut := acts(ctx, reg, "run", idea, "--model", "local:m1", "--base-url", srv.URL+"/v1", "--store", db, "--id", "r", "--max-steps", "2", "--json")
	if want := "acts: agent: too many steps (2); acts resume r --store " + db + " --max-steps N goes on with a higher limit\n"; code != 1 || errOut != want {
		t.Errorf("run: exit %d, stderr %q; want 1, %q", code, errOut, want)
	}
	if s := summaryOf(t, out); s.Steps != 2 || s.Status != "failed" {
		t.Errorf("run: summary %+v", s)
	}
	// The run's limit is saved: a resume without the flag keeps it.
	if code, _, errOut := acts(ctx, reg, "resume", "r", "--store", db); code != 1 || !strings.Contains(errOut, "too many steps (2)") {
		t.Errorf("resume: exit %d, stderr %q", code, errOut)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	code, out, errOut = acts(ctx, reg, "resume", "r", "--store", db, "--max-steps", "5", "--json")
	if s := summaryOf(t, out); code != 0 || s.Status != "done" || s.Steps != 4 || string(s.Output) != `{"capital":"Paris"}` {
		t.Errorf("resume --max-steps 5: exit %d, %+v, stderr %q", code, s, errOut)
	}
	if code, _, errOut := acts(ctx, reg, "run", idea, "--store", db, "--max-steps", "-1", "--model", "local:m1", "--base-url", srv.URL+"/v1"); code != 2 || !strings.Contains(errOut, "--max-steps must be 0 (the default) or more, got -1") {
		t.Errorf("--max-steps -1: exit %d, stderr %q", code, errOut)
	}
}

// TestRunLazyPlan: a run of an Idea whose context ends with a lazy plan
// asks the model to plan and runs nothing; the summary shows the calls
// planned, which are the run's result.
func TestRunLazyPlan(t *testing.T) {
	const call = `{"_tool":"classify","text":"†input.text","_outputPath":"†state.cls"}`
	srv := openaitest.Server(t, func([]byte) string { return `{"calls":[` + call + `],"output":null}` })
	idea := writeFile(t, "lazy.json", `{"schema":{"type":"object"},"context":[
		{"type":"tool","tool":{"classify":{"type":"object","properties":{"text":{"type":"string"},"_output":{"type":"string"}}}}},
		{"type":"input","text":"hello"},{"type":"plan","mode":"lazy","plan":[]}]}`)
	args := []string{"run", idea, "--model", "local:m1", "--base-url", srv.URL + "/v1", "--store", "memory:"}
	code, out, errOut := acts(t.Context(), agent.NewRegistry(), append(args, "--json")...)
	var s struct {
		Calls int               `json:"calls"`
		Plan  []json.RawMessage `json:"plan"`
	}
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil {
		t.Fatalf("exit %d, %q, %v: %s", code, out, err, errOut)
	}
	if len(s.Plan) != 1 || string(s.Plan[0]) != call || s.Calls != 0 {
		t.Errorf("--json summary %s: want the plan %s and no call run", out, call)
	}
	code, out, errOut = acts(t.Context(), agent.NewRegistry(), args...)
	if want := "  plan (not run): 1 call\n    0: " + call + "\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, summary:\n%s\nwant it to hold:\n%s(stderr %q)", code, out, want, errOut)
	}
	// Its trace names the plan's tools, as no call of it runs.
	db := filepath.Join(t.TempDir(), "runs.db")
	if code, _, errOut := acts(t.Context(), agent.NewRegistry(), "run", idea, "--model", "local:m1", "--base-url", srv.URL+"/v1", "--store", db, "--id", "lazy"); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	if _, out, _ := acts(t.Context(), agent.NewRegistry(), "log", "lazy", "--store", db); !strings.Contains(out, "plan of 1 call: classify\n") {
		t.Errorf("log:\n%s", out)
	}
}

func TestDescribePlan(t *testing.T) {
	for plan, want := range map[string]string{
		`[]`: "plan of 0 calls",
		`[{"_tool":"a"},{"_tool":"b\u001b[31m"}]`:                                                             "plan of 2 calls: a, b\\x1b[31m",
		`[{"_tool":"a"},{"_tool":"b"},{"_tool":"c"},{"_tool":"d"},{"_tool":"e"},{"_tool":"f"},{"_tool":"g"}]`: "plan of 7 calls: a, b, c, d, e and 2 more",
	} {
		if got := describe(&message.Message{Type: message.TypePlan, Plan: json.RawMessage(plan)}); got != want {
			t.Errorf("%s: %q, want %q", plan, got, want)
		}
	}
}

// TestRunFlagChecks: a flag value that means nothing is a usage error,
// not a default taken silently.
func TestRunFlagChecks(t *testing.T) {
	idea := writeIdea(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--concurrency", "-1"}, "--concurrency must be 0 (the default) or more, got -1"},
		{[]string{"--max-steps", "-2"}, "--max-steps must be 0 (the default) or more, got -2"},
		{[]string{"--lease", "0s"}, "--lease must be positive, got 0s"},
	} {
		for _, cmd := range [][]string{{"run", idea}, {"resume", "r"}, {"continue", "r", "--message", "hi"}} {
			code, _, errOut := acts(t.Context(), agent.NewRegistry(), append(append(cmd, "--store", "memory:", "--model", "openai:m"), tt.args...)...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Errorf("%s %q: exit %d, stderr %q; want 2, %q", cmd[0], tt.args, code, errOut, tt.want)
			}
		}
	}
}

// TestRunPlanNotLast: an Idea's last plan runs even when messages follow
// it, as the documentation says; the run is a plan run, not a loop.
func TestRunPlanNotLast(t *testing.T) {
	reg, calls := batchEnv(false, nil)
	idea := writeFile(t, "after.json", `{"schema":{"type":"object"},"context":[
		{"type":"tool","tool":{"double":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}},
		{"type":"plan","plan":[{"_tool":"double","n":"†input.n","_outputPath":"†state.doubled"}]},
		{"type":"text","text":"And then?"}]}`)
	code, out, errOut := acts(t.Context(), reg, "run", idea, "--input", `{"n":2}`, "--store", "memory:", "--json")
	if s := summaryOf(t, out); code != 0 || s.Status != "done" || s.Calls != 1 || calls.Load() != 1 {
		t.Errorf("exit %d, summary %+v, %d calls, stderr %q", code, s, calls.Load(), errOut)
	}
}

// TestSummaryHidesPassword: the summary's trace line names a PostgreSQL
// store without its password, since summaries end up in logs.
func TestSummaryHidesPassword(t *testing.T) {
	var b bytes.Buffer
	rf := &runFlags{store: "postgres://acts:s3cret@db.internal:5432/runs"}
	if err := printSummary(&Env{Stdout: &b}, &summary{Run: "r", Status: store.Done, ran: true}, rf); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, "s3cret") || !strings.Contains(out, "trace: acts log r --store postgres://acts:xxxxx@db.internal:5432/runs") {
		t.Errorf("summary:\n%s", out)
	}
}

// TestInputMatchesDeclaration: an Idea that declares its input (an input
// message with a schema and no data) takes only inputs that fit it. One
// that does not fit is an error naming the input and the Idea, before any
// run is created or any request made, for run and request alike.
func TestInputMatchesDeclaration(t *testing.T) {
	var requests atomic.Int64
	srv := openaitest.Server(t, func([]byte) string {
		requests.Add(1)
		return `{"output":{"capital":"Paris"}}`
	})
	idea := writeFile(t, "capital.json", `{"schema":{"type":"object"},"context":[
		{"type":"input","schema":{"type":"object","properties":{"country":{"type":"string"}},"required":["country"],"additionalProperties":false}}]}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	model := []string{"--model", "local:m1", "--base-url", srv.URL + "/v1"}
	for _, tt := range []struct {
		name, input string
		want        string
	}{
		{"missing property", `{"nation":"France"}`, "--input: does not fit the input schema of " + idea + ": "},
		{"wrong type", `{"country":5}`, "--input: does not fit the input schema of " + idea + ": "},
		{"instanced element", `[{"country":"France"},{"country":"Italy","capital":"Rome"}]`, "--input: element 2: does not fit the input schema of " + idea + ": "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, cmd := range [][]string{
				{"run", idea, "--input", tt.input, "--store", db, "--id", "bad"},
				{"request", idea, "--input", tt.input},
			} {
				code, out, errOut := acts(t.Context(), agent.NewRegistry(), append(cmd, model...)...)
				if code != 1 || out != "" || !strings.HasPrefix(errOut, "acts: "+tt.want) {
					t.Errorf("%s: exit %d, %q, %q; want exit 1 and %q", cmd[0], code, out, errOut, tt.want)
				}
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests made for inputs that do not fit", n)
	}
	// Inputs that fit run, the instanced ones with their _instance taken
	// out before the check.
	code, _, errOut := acts(t.Context(), agent.NewRegistry(), append([]string{"run", idea, "--input", `[{"country":"France","_instance":"fr"},{"country":"Italy"}]`, "--store", db, "--id", "good"}, model...)...)
	if code != 0 {
		t.Errorf("inputs that fit: exit %d, %q", code, errOut)
	}
	code, out, _ := acts(t.Context(), agent.NewRegistry(), "runs", "--store", db, "--json")
	if code != 0 || strings.Contains(out, `"bad"`) || !strings.Contains(out, `"good"`) {
		t.Errorf("runs: exit %d, %q; want good alone", code, out)
	}
}

// TestHintsNameTheStore: the command a run's end suggests works as
// printed: it names the store the run is in, as the summary's trace line
// does, so a run kept outside acts.db is found. A run that failed on its
// provider (a rate limit, a server error) is saved and says how to go on.
func TestHintsNameTheStore(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")

	reg, _ := batchEnv(true, nil)
	idea := writeFile(t, "batch.json", batch)
	code, _, errOut := acts(t.Context(), reg, "run", idea, "--input", `[{"n":1},{"n":7}]`, "--store", db, "--id", "f")
	if want := "1 of 4 calls failed; see acts log f --store " + db + "\n"; code != ExitCallsFailed || !strings.HasSuffix(errOut, want) {
		t.Errorf("failed call: exit %d, %q; want it to end %q", code, errOut, want)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	reg, _ = batchEnv(false, func(*agent.Call) { cancel() })
	code, _, errOut = acts(ctx, reg, "run", idea, "--input", `{"n":1}`, "--store", db, "--id", "c", "--concurrency", "1")
	if want := "interrupted; run c is saved: continue it with acts resume c --store " + db + "\n"; code != ExitInterrupted || !strings.HasSuffix(errOut, want) {
		t.Errorf("interrupted: exit %d, %q; want it to end %q", code, errOut, want)
	}

	var fail atomic.Bool
	fail.Store(true)
	answer := openaitest.Server(t, func([]byte) string { return `{"output":{"capital":"Paris"}}` })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"Invalid schema for response_format 'output'","type":"invalid_request_error","param":"response_format","code":null}}`)
			return
		}
		target, _ := url.Parse(answer.URL)
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	defer srv.Close()
	loop := writeFile(t, "capital.json", `{"schema":{"type":"object"},"context":[{"type":"input","country":"France"}]}`)
	code, _, errOut = acts(t.Context(), agent.NewRegistry(), "run", loop, "--model", "local:m1", "--base-url", srv.URL, "--store", db, "--id", "p")
	if want := "; run p is saved: acts resume p --store " + db + " goes on from where it stopped\n"; code != 1 || !strings.HasSuffix(errOut, want) || !strings.Contains(errOut, "400 Bad Request") {
		t.Errorf("provider failure: exit %d, %q; want it to end %q", code, errOut, want)
	}
	fail.Store(false)
	if code, out, errOut := acts(t.Context(), agent.NewRegistry(), "resume", "p", "--store", db); code != 0 || !strings.Contains(out, `"capital":"Paris"`) {
		t.Errorf("resume as the hint says: exit %d, %q, %q", code, out, errOut)
	}
	// A run in memory is gone: no hint to find it.
	fail.Store(true)
	code, _, errOut = acts(t.Context(), agent.NewRegistry(), "run", loop, "--model", "local:m1", "--base-url", srv.URL, "--store", "memory:")
	if code != 1 || strings.Contains(errOut, "acts resume") {
		t.Errorf("provider failure in memory: exit %d, %q", code, errOut)
	}
}

// TestHintAfterProviderCut: a run whose provider's stream broke, or
// never answered, is saved as one a provider's error failed, and says
// how to go on as that one does.
func TestHintAfterProviderCut(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	var fail atomic.Bool
	fail.Store(true)
	answer := openaitest.Server(t, func([]byte) string { return `{"output":{"capital":"Paris"}}` })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() { // a first chunk, then the connection breaks
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m1","choices":[{"index":0,"delta":{"content":"{\"output\":"},"finish_reason":null}]}`+"\n\n")
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		target, _ := url.Parse(answer.URL)
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	defer srv.Close()
	loop := writeFile(t, "capital.json", `{"schema":{"type":"object"},"context":[{"type":"input","country":"France"}]}`)
	code, _, errOut := acts(t.Context(), agent.NewRegistry(), "run", loop, "--model", "local:m1", "--base-url", srv.URL, "--store", db, "--id", "p")
	if want := "; run p is saved: acts resume p --store " + db + " goes on from where it stopped\n"; code != 1 || !strings.HasSuffix(errOut, want) || !strings.Contains(errOut, "stream ended early") {
		t.Errorf("cut stream: exit %d, %q; want it to end %q", code, errOut, want)
	}
	fail.Store(false)
	if code, out, errOut := acts(t.Context(), agent.NewRegistry(), "resume", "p", "--store", db); code != 0 || !strings.Contains(out, `"capital":"Paris"`) {
		t.Errorf("resume as the hint says: exit %d, %q, %q", code, out, errOut)
	}

	// A stream that went idle (not retried: the answer had begun).
	idle := func(ctx context.Context, name, model, baseURL string) (provider.Provider, error) {
		return provider.Func(func(ctx context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
			return func(yield func(*provider.Chunk, error) bool) {
				yield(nil, &provider.TimeoutError{Provider: "local", Model: model, Phase: provider.PhaseIdle, After: 2 * time.Minute})
			}
		}), nil
	}
	var stdout, stderr bytes.Buffer
	code = Main(t.Context(), []string{"run", loop, "--model", "local:m1", "--store", db, "--id", "i"},
		Env{Registry: agent.NewRegistry(), Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Providers: idle})
	if want := "; run i is saved: acts resume i --store " + db + " goes on from where it stopped\n"; code != 1 || !strings.HasSuffix(stderr.String(), want) || !strings.Contains(stderr.String(), "stream idle for 2m0s") {
		t.Errorf("idle stream: exit %d, %q; want it to end %q", code, stderr.String(), want)
	}
}

// TestLogInputDeclaration: acts log shows an Idea's input declaration (an
// input message with a schema and no data) as the schema it declares,
// not as an input with nothing in it.
func TestLogInputDeclaration(t *testing.T) {
	srv := openaitest.Server(t, func([]byte) string { return `{"output":{"capital":"Paris"}}` })
	idea := writeFile(t, "capital.json", `{"schema":{"type":"object"},"context":[
		{"type":"input","schema":{"type":"object","properties":{"country":{"type":"string"}}}}]}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	if code, _, errOut := acts(t.Context(), agent.NewRegistry(), "run", idea, "--input", `{"country":"France"}`, "--model", "local:m1", "--base-url", srv.URL+"/v1", "--store", db, "--id", "r"); code != 0 {
		t.Fatalf("run: exit %d, %s", code, errOut)
	}
	_, out, _ := acts(t.Context(), agent.NewRegistry(), "log", "r", "--store", db)
	for _, want := range []string{
		"    0  input schema {\"type\":\"object\",\"properties\":{\"country\":{\"type\":\"string\"}}}\n",
		"    1  input {\"country\":\"France\"}\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestNameInHints: a program with activities of its own, such as
// examples/orders, names itself in the commands its output tells the user
// to type next, since acts (cmd/acts) lacks its activities and cannot
// resume its runs.
func TestNameInHints(t *testing.T) {
	ctx := context.Background()
	idea := writeFile(t, "batch.json", batch)
	db := filepath.Join(t.TempDir(), "runs.db")
	reg, _ := batchEnv(false, nil)
	orders := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Main(ctx, args, Env{Registry: reg, Name: "go run ./examples/orders", Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}
	for _, tt := range []struct {
		name string
		args []string
		want string // in standard output or error
	}{
		{"run", []string{"run", idea, "--input", `[{"n":1},{"n":7}]`, "--store", db, "--id", "p"}, "  trace: go run ./examples/orders log p --store " + db + "\n"},
		{"run taken", []string{"run", idea, "--store", db, "--id", "p"}, "continue it with: go run ./examples/orders resume p --store " + db + "\n"},
		{"fork", []string{"fork", "p", "--at", "4", "--id", "b", "--store", db}, "continue it with: go run ./examples/orders resume b --store " + db + "\n"},
		{"usage", []string{"log"}, "Usage:\n  go run ./examples/orders log RUN [flags]\n"},
		{"more", []string{"log"}, `Run "go run ./examples/orders log --help" for more.`},
		{"commands", []string{"help"}, `Run "go run ./examples/orders help COMMAND" or "go run ./examples/orders COMMAND --help"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, out, errOut := orders(tt.args...)
			if !strings.Contains(out+errOut, tt.want) {
				t.Errorf("got\n%s%s\nwant it to hold %q", out, errOut, tt.want)
			}
			if strings.Contains(out+errOut, "acts log") || strings.Contains(out+errOut, "acts resume") {
				t.Errorf("got\n%s%s\nwhich names acts", out, errOut)
			}
		})
	}
}
