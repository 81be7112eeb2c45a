package cli

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/openaitest"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/openai"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/sqlite"
)

// chatIdea is an Idea with no tools: each turn's answer is a capital.
const chatIdea = `{"schema":{"type":"object","properties":{"capital":{"type":"string"}},"required":["capital"]},
	"context":[{"type":"text","role":"system","text":"Name the capital."},{"type":"text","text":"France?"}]}`

// wireMessage is a message of an OpenAI chat request, as sent.
type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// wireMessages returns the messages of an OpenAI chat request body.
func wireMessages(t *testing.T, body []byte) []wireMessage {
	t.Helper()
	var req struct {
		Messages []wireMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body %s: %v", body, err)
	}
	return req.Messages
}

// contentText is a message's content as text, whether a string or parts.
func contentText(m wireMessage) string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// TestContinue: acts run answers one question, acts continue asks the
// next in the same run. The second turn's request carries the first
// turn's messages as they were sent, the answer, and what was said next,
// and goes to the endpoint the run was made with.
func TestContinue(t *testing.T) {
	t.Setenv("ACTS_MODEL", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	var mu sync.Mutex
	var bodies [][]byte
	srv := openaitest.Server(t, func(body []byte) string {
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, body)
		if len(bodies) == 1 {
			return `{"output":{"capital":"Paris"}}`
		}
		return `{"output":{"capital":"Rome"}}`
	})
	idea := writeFile(t, "chat.json", chatIdea)
	db := filepath.Join(t.TempDir(), "runs.db")
	code, _, errOut := acts(t.Context(), agent.NewRegistry(), "run", idea, "--model", "local:m1", "--base-url", srv.URL+"/v1", "--store", db, "--id", "chat", "--json")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	// ACTS_MODEL names no run: the turn calls the run's model.
	t.Setenv("ACTS_MODEL", "openai:gpt-other")
	data := writeFile(t, "data.jsonl", `{"type":"input","country":"Italy"}`+"\n")
	code, out, errOut := acts(t.Context(), agent.NewRegistry(), "continue", "chat", "--message", "And Italy?", "--messages", "@"+data, "--store", db, "--json")
	if code != 0 {
		t.Fatalf("continue: exit %d: %s", code, errOut)
	}
	if want := "continuing run chat: local at " + srv.URL + "/v1, model m1\n"; errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
	s := summaryOf(t, out)
	if s.Run != "chat" || s.Status != "done" || string(s.Output) != `{"capital":"Rome"}` || s.Steps != 2 || s.Messages != 2+3 {
		t.Errorf("summary %+v", s)
	}

	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	first, second := wireMessages(t, bodies[0]), wireMessages(t, bodies[1])
	if len(second) < len(first)+3 {
		t.Fatalf("the second request has %d messages, the first %d:\n%s", len(second), len(first), bodies[1])
	}
	if diff := cmp.Diff(second[:len(first)], first); diff != "" {
		t.Errorf("the second request does not start with the first's messages (-got +want):\n%s", diff)
	}
	next := second[len(first):]
	if next[0].Role != "assistant" || contentText(next[0]) != `{"capital":"Paris"}` {
		t.Errorf("after the first turn: %s %s, want the answer", next[0].Role, next[0].Content)
	}
	if next[1].Role != "user" || contentText(next[1]) != "And Italy?" {
		t.Errorf("then: %s %s, want the message", next[1].Role, next[1].Content)
	}
	if len(next) < 3 || !strings.Contains(contentText(next[2]), `"country":"Italy"`) {
		t.Errorf("then: %+v, want the data of --messages", next[2:])
	}

	// The run's log is the conversation, in the order given.
	msgs := runMessages(t, db, "chat")
	var got []string
	for _, m := range msgs[2:] {
		got = append(got, string(m.Type)+" "+string(m.Role)+" "+m.Text+string(m.Data))
	}
	want := []string{`text assistant {"capital":"Paris"}`, "text user And Italy?", `data  {"country":"Italy"}`}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("the log after the context (-got +want):\n%s", diff)
	}
	if _, out, _ := acts(t.Context(), agent.NewRegistry(), "runs", "--store", db, "--json"); !strings.Contains(out, `"id":"chat","kind":"loop","status":"done"`) {
		t.Errorf("runs: %s", out)
	}

	// The text summary.
	code, out, errOut = acts(t.Context(), agent.NewRegistry(), "continue", "chat", "--message", "Spain?", "--store", db)
	if code != 0 || !strings.HasPrefix(out, "run chat: done in ") || !strings.Contains(out, "steps: 3") || !strings.Contains(out, "trace: acts log chat --store "+db) {
		t.Errorf("continue: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestContinueRefused: what continue cannot do, it says, and leaves the
// run as it was.
func TestContinueRefused(t *testing.T) {
	srv := openaitest.Server(t, func([]byte) string { return `{"output":{"capital":"Paris"}}` })
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"model overloaded","type":"invalid_request_error"}}`))
	}))
	defer failing.Close()
	idea := writeFile(t, "chat.json", chatIdea)
	db := filepath.Join(t.TempDir(), "runs.db")
	ctx := t.Context()
	reg := agent.NewRegistry()
	if code, _, errOut := acts(ctx, reg, "run", idea, "--model", "local:m1", "--base-url", srv.URL+"/v1", "--store", db, "--id", "done"); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	if code, _, errOut := acts(ctx, reg, "run", idea, "--model", "local:m1", "--base-url", failing.URL+"/v1", "--store", db, "--id", "failed"); code != 1 {
		t.Fatalf("run against a failing server: exit %d: %s", code, errOut)
	}
	plans, _ := batchEnv(false, nil)
	if code, _, errOut := acts(ctx, plans, "run", writeFile(t, "batch.json", batch), "--input", `{"n":1}`, "--store", db, "--id", "plan"); code != 0 {
		t.Fatalf("plan run: %s", errOut)
	}
	// Another process holds "held" (it is continuing it, say).
	if code, _, errOut := acts(ctx, reg, "run", idea, "--model", "local:m1", "--base-url", srv.URL+"/v1", "--store", db, "--id", "held"); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour)
	err = st.Acquire(ctx, "held", store.Lease{Owner: "other-host", Expires: until}, time.Now())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, before, _ := acts(ctx, reg, "runs", "--store", db, "--json")

	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string // a part of it
	}{
		{"no message", []string{"done"}, 2, "acts: usage: continue needs a message: --message TEXT|@FILE or --messages JSON|@FILE\n"},
		{"no run", []string{"--message", "hi"}, 2, "acts: usage: continue takes RUN\n"},
		{"two runs", []string{"done", "failed", "--message", "hi"}, 2, "acts: usage: continue takes RUN\n"},
		{"an empty message", []string{"done", "--message", ""}, 2, "acts: usage: --message: the message is empty (message 1)\n"},
		{"a missing file", []string{"done", "--message", "@/nonexistent/said.txt"}, 1, "acts: --message @/nonexistent/said.txt: open /nonexistent/said.txt: no such file or directory\n"},
		{"a malformed message", []string{"done", "--messages", `{"type":7}`}, 1, "acts: --messages: "},
		{"a message of no known type", []string{"done", "--messages", `{"type":"nope"}`}, 1, `acts: agent: continue done: the turn's message 1: message 3 (nope): no handler for message type "nope"`},
		{"a tool no registry holds", []string{"done", "--message", "hi", "--messages", `{"type":"tool","tool":"ghost"}`}, 1, `acts: agent: continue done: the turn's message 2: message 4 (tool): unknown tool "ghost"`},
		{"a preset no registry holds", []string{"done", "--messages", `{"type":"preset","preset":"ghost"}`}, 1, `acts: agent: continue done: the turn's message 1: message 3 (preset): unknown preset "ghost"`},
		{"unknown run", []string{"nobody", "--message", "hi"}, 1, "not found"},
		{"failed run", []string{"failed", "--message", "hi"}, 1, "acts: continue failed: agent: the run has not finished: it is failed; resume it first: acts resume failed\n"},
		{"plan run", []string{"plan", "--message", "hi"}, 1, "acts: continue plan: agent: not a loop run: it is a plan run, which has no conversation to go on with\n"},
		{"held run", []string{"held", "--message", "hi"}, 1, "acts: continue held: store: run held is held by other-host until " + until.UTC().Format(time.RFC3339) + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := acts(ctx, reg, append([]string{"continue", "--store", db}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, errOut, tt.code, tt.stderr)
			}
			if out != "" {
				t.Errorf("stdout %q: a summary of a turn that did not start", out)
			}
		})
	}
	if _, after, _ := acts(ctx, reg, "runs", "--store", db, "--json"); after != before {
		t.Errorf("the runs changed:\n%s\nwere:\n%s", after, before)
	}
}

// TestContinueMCP: the turn's calls use the tools of the Idea's MCP
// servers, which continue starts again.
func TestContinueMCP(t *testing.T) {
	idea := echoIdea(t, "stdio")
	db := filepath.Join(t.TempDir(), "runs.db")
	p := scripted.Solutions(answer)
	if code, _, errOut := actsScripted(t.Context(), agent.NewRegistry(), p, "run", idea, "--model", "test:m", "--store", db, "--id", "r"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	p = scripted.Solutions(callAgain, `{"calls":[],"output":{"said":"echo: again"}}`)
	code, out, errOut := actsScripted(t.Context(), agent.NewRegistry(), p, "continue", "r", "--message", "Again.", "--model", "test:m", "--store", db, "--json")
	if code != 0 || errOut != "continuing run r: model m\n" {
		t.Fatalf("continue: exit %d: %s", code, errOut)
	}
	if s := summaryOf(t, out); s.Status != "done" || s.Calls != 1 || s.Failed != 0 || string(s.Output) != `{"said":"echo: again"}` {
		t.Errorf("summary %+v", s)
	}
	if _, out, _ := acts(t.Context(), agent.NewRegistry(), "log", "r", "--store", db); !strings.Contains(out, `"echo: again"`) {
		t.Errorf("log:\n%s", out)
	}
}

func TestReadTurn(t *testing.T) {
	text := writeFile(t, "said.txt", "Line one.\nLine two.\n")
	lines := writeFile(t, "m.jsonl", "{\"type\":\"text\",\"text\":\"a\"}\n\n{\"type\":\"input\",\"x\":1}\n")
	for _, tt := range []struct {
		name  string
		said  []turnMessage
		stdin string
		want  []string // role or kind, then text or data
		err   string
	}{
		{"text", []turnMessage{{spec: "hi"}}, "", []string{"user hi"}, ""},
		{"a file keeps its lines, not its last newline", []turnMessage{{spec: "@" + text}}, "", []string{"user Line one.\nLine two."}, ""},
		{"stdin", []turnMessage{{spec: "@-"}}, "piped\n", []string{"user piped"}, ""},
		{"stdin once", []turnMessage{{spec: "@-"}, {spec: "@-"}}, "x", nil, "standard input is read once"},
		{"in order", []turnMessage{{spec: `{"type":"input","x":0}`, protocol: true}, {spec: "b"}, {spec: "@" + lines, protocol: true}}, "",
			[]string{`input {"x":0}`, "user b", "user a", `input {"x":1}`}, ""},
		{"an array", []turnMessage{{spec: `[{"type":"text","text":"a"},{"type":"text","role":"assistant","text":"b"}]`, protocol: true}}, "", []string{"user a", "assistant b"}, ""},
		{"an object over lines", []turnMessage{{spec: "{\"type\":\"text\",\n\"text\":\"a\"}", protocol: true}}, "", []string{"user a"}, ""},
		{"a bad line", []turnMessage{{spec: "{\"type\":\"text\",\"text\":\"a\"}\n{nope", protocol: true}}, "", nil, "--messages: line 2: "},
		{"a bad element", []turnMessage{{spec: `[{"type":"text","text":"a"},{"type":7}]`, protocol: true}}, "", nil, "--messages: message 1"},
		{"no messages", []turnMessage{{spec: "[]", protocol: true}}, "", nil, "--messages: no messages"},
		{"an empty file", []turnMessage{{spec: "@-"}}, "\n", nil, "--message @-: the message is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msgs, err := readTurn(strings.NewReader(tt.stdin), tt.said)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range msgs {
				switch m.Type {
				case message.TypeText:
					got = append(got, string(m.Role)+" "+m.Text)
				default:
					got = append(got, m.Kind+" "+string(m.Data))
				}
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("messages (-got +want):\n%s", diff)
			}
		})
	}
	if _, err := readTurn(strings.NewReader(""), []turnMessage{{spec: ""}}); !errors.Is(err, errUsage) {
		t.Errorf("an empty --message: %v, want a usage error", err)
	}
}

// TestResumeHeld: a resume of a run another process holds (an
// interrupted one, which it is resuming, say) fails naming the holder,
// does not say it is resuming, prints no summary (which would call the
// run failed), and leaves the run as it was.
func TestResumeHeld(t *testing.T) {
	srv := openaitest.Server(t, func([]byte) string { return `{"output":{"capital":"Paris"}}` })
	idea := writeFile(t, "chat.json", chatIdea)
	db := filepath.Join(t.TempDir(), "runs.db")
	ctx := t.Context()
	reg := agent.NewRegistry()
	if code, _, errOut := acts(ctx, reg, "run", idea, "--model", "local:m1", "--base-url", srv.URL+"/v1", "--store", db, "--id", "held"); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour)
	err = st.Acquire(ctx, "held", store.Lease{Owner: "other-host", Expires: until}, time.Now())
	if err == nil {
		var run store.Run
		if run, err = st.Load(ctx, "held"); err == nil {
			run.Status = store.Interrupted
			err = st.Save(ctx, "other-host", run)
		}
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, before, _ := acts(ctx, reg, "runs", "--store", db, "--json")
	code, out, errOut := acts(ctx, reg, "resume", "held", "--store", db)
	if want := "run held is held by other-host"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, want)
	}
	if strings.Contains(errOut, "resuming") {
		t.Errorf("stderr %q: says it is resuming a run it did not get", errOut)
	}
	if out != "" {
		t.Errorf("stdout %q: a summary of a resume that did not start", out)
	}
	if _, after, _ := acts(ctx, reg, "runs", "--store", db, "--json"); after != before {
		t.Errorf("the runs changed:\n%s\nwere:\n%s", after, before)
	}
}

// TestResumeDoneNeedsNoModel: a done loop run made by a program whose
// provider the CLI cannot rebuild resumes to its result without --model,
// since nothing is asked; continuing it still needs one.
func TestResumeDoneNeedsNoModel(t *testing.T) {
	ctx := t.Context()
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{Provider: scripted.Solutions(`{"output":"Paris"}`), Store: st, RunID: "done"}
	_, err = agent.Run(ctx, cfg, json.RawMessage(`{"type":"string"}`), []message.Message{message.Text("The capital of France?")})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("ACTS_MODEL", "")
	reg := agent.NewRegistry()
	code, out, errOut := acts(ctx, reg, "resume", "done", "--store", db)
	if code != 0 || !strings.Contains(out, "Paris") || errOut != "" {
		t.Errorf("resume of a done run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := acts(ctx, reg, "continue", "done", "--message", "And of Spain?", "--store", db); code != 2 || !strings.Contains(errOut, "needs --model") {
		t.Errorf("continue without a model: exit %d, stderr %q", code, errOut)
	}
}

// TestResumeAdapterModel: a run a Go program made through an adapter
// whose own Config names the model (the agent Config none) resumes with
// that model, without --model.
func TestResumeAdapterModel(t *testing.T) {
	ctx := t.Context()
	var ready atomic.Bool
	var models []string
	var mu sync.Mutex
	first, interrupt := context.WithCancel(ctx)
	defer interrupt()
	srv := openaitest.Server(t, func(body []byte) string {
		var req struct{ Model string }
		json.Unmarshal(body, &req)
		mu.Lock()
		models = append(models, req.Model)
		mu.Unlock()
		if !ready.Load() {
			interrupt() // Ctrl-C while the model answers
			return `not JSON`
		}
		return `{"output":"Paris"}`
	})
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("ACTS_MODEL", "")
	p, err := openai.New(openai.Config{Model: "m1", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{Provider: p, Store: st, RunID: "r"}
	_, err = agent.Run(first, cfg, json.RawMessage(`{"type":"string"}`), []message.Message{message.Text("The capital of France?")})
	run, _ := st.Load(ctx, "r")
	st.Close()
	if err == nil || run.Status != store.Interrupted || run.Model != "openai:m1" {
		t.Fatalf("the first attempt: %v; run %s, model %q", err, run.Status, run.Model)
	}
	ready.Store(true)
	code, out, errOut := acts(ctx, agent.NewRegistry(), "resume", "r", "--store", db)
	if code != 0 || !strings.Contains(out, "Paris") || !strings.Contains(errOut, "m1") {
		t.Errorf("resume: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range models {
		if m != "m1" {
			t.Errorf("models asked %q, want m1 each time", models)
			break
		}
	}
}

// TestResumeHeldStartsNothing: a resume of a run another process holds is
// refused before the run's MCP servers are started.
func TestResumeHeldStartsNothing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(t.Context())
	// A loop run cut at its first request, whose Idea had an MCP server
	// that cannot start.
	p := provider.Func(func(context.Context, *provider.Request) iter.Seq2[*provider.Chunk, error] {
		cancel()
		return func(yield func(*provider.Chunk, error) bool) { yield(nil, context.Canceled) }
	})
	cfg := agent.Config{Provider: p, Store: st, RunID: "held", MCP: []agent.MCPServer{{Name: "gone", Command: []string{filepath.Join(t.TempDir(), "no-such-server")}}}}
	if _, err := agent.Run(ctx, cfg, json.RawMessage(`{"type":"object"}`), []message.Message{message.Text("hi")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("run: %v", err)
	}
	if err := st.Acquire(t.Context(), "held", store.Lease{Owner: "other-host", Expires: time.Now().Add(time.Hour)}, time.Now()); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := acts(t.Context(), agent.NewRegistry(), "resume", "held", "--store", db, "--model", "local:m1", "--base-url", "http://127.0.0.1:9/v1")
	if want := "run held is held by other-host"; code != 1 || out != "" || !strings.Contains(errOut, want) || strings.Contains(errOut, "gone") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errOut, want)
	}
}
