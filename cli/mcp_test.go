package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/sqlite"
)

// TestMain runs a small MCP server on stdio when the test binary is
// started as one (ACTS_CLI_TEST_MCP=stdio), a server that dies at once
// (=die), or one that dies at once while a file exists (=unless:path);
// otherwise the tests.
func TestMain(m *testing.M) {
	mode := os.Getenv("ACTS_CLI_TEST_MCP")
	if path, ok := strings.CutPrefix(mode, "unless:"); ok {
		mode = "stdio"
		if _, err := os.Stat(path); err == nil {
			fmt.Fprintln(os.Stderr, "the server is down")
			os.Exit(2)
		}
	}
	switch mode {
	case "stdio":
		if err := echoServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "die":
		fmt.Fprintln(os.Stderr, "no such repository")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// echoServer is an MCP server made with the SDK alone: echo says its
// text back.
func echoServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "echo", Version: "v1"}, nil)
	s.AddTool(&sdk.Tool{
		Name:         "echo",
		Description:  "Says the text back.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"said":{"type":"string"}},"required":["said"]}`),
	}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var in struct{ Text string }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{StructuredContent: map[string]string{"said": "echo: " + in.Text}}, nil
	})
	return s
}

// echoIdea writes an Idea that lists the test binary as an MCP server
// (mode: stdio or die) and returns its path.
func echoIdea(t *testing.T, mode string) string {
	t.Helper()
	server, err := json.Marshal(agent.MCPServer{Name: "echo", Command: []string{os.Args[0]}, Env: []string{"ACTS_CLI_TEST_MCP=" + mode}, Prefix: "t_"})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "echo.json", `{"schema":{"type":"object","properties":{"said":{"type":"string"}},"required":["said"]},
		"context":[{"type":"text","role":"system","text":"Repeat what the user says, with the echo tool."},{"type":"input","text":"hello"}],
		"mcp":[`+string(server)+`]}`)
}

// scriptedEnv returns the Env of a command whose model is p, whatever
// --model names.
func scriptedEnv(reg *agent.Registry, p *scripted.Provider, stdout, stderr io.Writer) Env {
	return Env{Registry: reg, Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr,
		Providers: func(context.Context, string, string, string) (provider.Provider, error) { return p, nil }}
}

// actsScripted runs a command with the model p, as acts does.
func actsScripted(ctx context.Context, reg *agent.Registry, p *scripted.Provider, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := Main(ctx, args, scriptedEnv(reg, p, &stdout, &stderr))
	return code, stdout.String(), stderr.String()
}

const (
	callEcho  = `{"calls":[{"_tool":"t_echo","text":"hello","_outputPath":"†state.echoed"}],"output":null}`
	callAgain = `{"calls":[{"_tool":"t_echo","text":"again","_outputPath":"†state.again"}],"output":null}`
	answer    = `{"calls":[],"output":{"said":"echo: hello"}}`
)

func TestRunMCP(t *testing.T) {
	idea := echoIdea(t, "stdio")
	db := filepath.Join(t.TempDir(), "runs.db")
	p := scripted.Solutions(callEcho, answer)
	code, out, errOut := actsScripted(t.Context(), agent.NewRegistry(), p, "run", idea, "--model", "test:m", "--store", db, "--id", "m", "--json")
	if code != 0 || errOut != "" { // the server closed quietly
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if s := summaryOf(t, out); s.Status != "done" || s.Calls != 1 || s.Failed != 0 || string(s.Output) != `{"said":"echo: hello"}` {
		t.Errorf("summary %+v", s)
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// The model is offered the server's tool, as an explicit tool: its
	// call writes no _output.
	if s := string(reqs[0].Schema); !strings.Contains(s, `"t_echo"`) || !strings.Contains(s, "Says the text back.") {
		t.Errorf("the first request's schema does not offer t_echo: %s", s)
	}
	// The server's result reached the model.
	if !strings.Contains(fmt.Sprint(reqs[1].Messages), "echo: hello") {
		t.Errorf("the second request lacks the tool's result: %v", reqs[1].Messages)
	}
	// The run's context starts with the tool message, definitions and
	// all, and its log has the result.
	_, out, _ = acts(t.Context(), agent.NewRegistry(), "log", "m", "--store", db)
	for _, want := range []string{`"t_echo"`, `call 1.0 started: t_echo {"_tool":"t_echo","text":"hello"`, `call 1.0 done`, `"echo: hello"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	msgs := runMessages(t, db, "m")
	if msgs[0].Type != message.TypeTool || !strings.Contains(string(msgs[0].Tool), `"t_echo":{`) || msgs[1].Role != message.RoleSystem {
		t.Errorf("the context starts %+v, %+v", msgs[0], msgs[1])
	}
}

func TestRunMCPPlan(t *testing.T) {
	// A plan whose calls go to an MCP server runs with no model.
	server, _ := json.Marshal(agent.MCPServer{Command: []string{os.Args[0]}, Env: []string{"ACTS_CLI_TEST_MCP=stdio"}, Prefix: "t_"})
	idea := writeFile(t, "plan.json", `{"schema":{},"context":[{"type":"plan","plan":[{"_tool":"t_echo","text":"†input.text","_outputPath":"†state.echoed"}]}],"mcp":[`+string(server)+`]}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"run", idea, "--input", `[{"text":"a"},{"text":"b"}]`, "--store", db, "--id", "p", "--json"}, Env{Registry: agent.NewRegistry(), Stdout: &stdout, Stderr: &stderr})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if s := summaryOf(t, stdout.String()); s.Status != "done" || s.Calls != 2 || s.Failed != 0 {
		t.Errorf("summary %+v", s)
	}
	if _, out, _ := acts(t.Context(), agent.NewRegistry(), "log", "p", "--store", db); !strings.Contains(out, `"echo: a"`) || !strings.Contains(out, `"echo: b"`) {
		t.Errorf("log:\n%s", out)
	}
}

func TestRunMCPServerFails(t *testing.T) {
	idea := echoIdea(t, "die")
	db := filepath.Join(t.TempDir(), "runs.db")
	code, _, errOut := actsScripted(t.Context(), agent.NewRegistry(), scripted.New(), "run", idea, "--model", "test:m", "--store", db, "--id", "x")
	if want := `acts: ` + idea + `: mcp: server "echo": connect: `; code != 1 || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "(stderr: no such repository)") {
		t.Errorf("exit %d, stderr %q; want 1, %q ... (stderr: no such repository)", code, errOut, want)
	}
	// No run is left behind.
	if _, out, _ := acts(t.Context(), agent.NewRegistry(), "runs", "--store", db, "--json"); strings.Contains(out, `"x"`) {
		t.Errorf("a run was created: %s", out)
	}
	code, _, errOut = actsScripted(t.Context(), agent.NewRegistry(), scripted.New(), "request", idea, "--model", "test:m")
	if code != 1 || !strings.Contains(errOut, `mcp: server "echo": connect: `) {
		t.Errorf("request: exit %d, stderr %q", code, errOut)
	}
}

func TestResumeMCP(t *testing.T) {
	idea := echoIdea(t, "stdio")
	db := filepath.Join(t.TempDir(), "runs.db")
	// The second request fails: the run stops after its MCP call.
	p := scripted.New(scripted.Response{Solutions: []string{callEcho}}, scripted.Response{Err: errors.New("model overloaded")})
	code, _, errOut := actsScripted(t.Context(), agent.NewRegistry(), p, "run", idea, "--model", "test:m", "--store", db, "--id", "r", "--json")
	if code != 1 || !strings.Contains(errOut, "model overloaded") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	run, err := st.Load(t.Context(), "r")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := agent.SavedSettings(run)
	if err != nil || saved == nil {
		t.Fatalf("saved settings %+v, %v", saved, err)
	}
	want := []agent.MCPServer{{Name: "echo", Command: []string{os.Args[0]}, Env: []string{"ACTS_CLI_TEST_MCP=stdio"}, Prefix: "t_"}}
	if diff := cmp.Diff(saved.MCP, want); diff != "" {
		t.Errorf("saved MCP servers (-got +want):\n%s", diff)
	}
	// A new process: its registry knows nothing of the server, and the
	// resume connects it again, so the next step's call runs.
	p = scripted.Solutions(callAgain, answer)
	code, out, errOut := actsScripted(t.Context(), agent.NewRegistry(), p, "resume", "r", "--model", "test:m", "--store", db, "--json")
	if code != 0 || strings.Contains(errOut, "acts: ") {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if s := summaryOf(t, out); s.Status != "done" || s.Failed != 0 || string(s.Output) != `{"said":"echo: hello"}` {
		t.Errorf("summary %+v", s)
	}
	_, out, _ = acts(t.Context(), agent.NewRegistry(), "log", "r", "--store", db)
	if !strings.Contains(out, `"echo: again"`) || !strings.Contains(out, "call 2.0 done") {
		t.Errorf("log:\n%s", out)
	}
}

// TestResumeMCPServerFails: a resume whose MCP server does not start
// fails with the server's error and leaves the run as it was, so that a
// later resume, the server back, carries it on.
func TestResumeMCPServerFails(t *testing.T) {
	down := filepath.Join(t.TempDir(), "down")
	idea := echoIdea(t, "unless:"+down)
	db := filepath.Join(t.TempDir(), "runs.db")
	p := scripted.New(scripted.Response{Solutions: []string{callEcho}}, scripted.Response{Err: errors.New("model overloaded")})
	if code, _, errOut := actsScripted(t.Context(), agent.NewRegistry(), p, "run", idea, "--model", "test:m", "--store", db, "--id", "r"); code != 1 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	_, before, _ := acts(t.Context(), agent.NewRegistry(), "log", "r", "--store", db)
	_, runsBefore, _ := acts(t.Context(), agent.NewRegistry(), "runs", "--store", db, "--json")

	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p = scripted.Solutions(callAgain, answer)
	code, _, errOut := actsScripted(t.Context(), agent.NewRegistry(), p, "resume", "r", "--model", "test:m", "--store", db)
	if code != 1 || !strings.Contains(errOut, `mcp: server "echo": connect: `) || !strings.Contains(errOut, "(stderr: the server is down)") {
		t.Errorf("resume with the server down: exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(errOut, "resuming") { // the run was not resumed
		t.Errorf("stderr %q: says it is resuming", errOut)
	}
	if n := len(p.Requests()); n != 0 {
		t.Errorf("the model was asked %d times with the server down", n)
	}
	if _, after, _ := acts(t.Context(), agent.NewRegistry(), "log", "r", "--store", db); after != before {
		t.Errorf("the log changed:\n%s\nwas:\n%s", after, before)
	}
	if _, runsAfter, _ := acts(t.Context(), agent.NewRegistry(), "runs", "--store", db, "--json"); runsAfter != runsBefore {
		t.Errorf("the run changed: %s, was %s", runsAfter, runsBefore)
	}

	if err := os.Remove(down); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := actsScripted(t.Context(), agent.NewRegistry(), p, "resume", "r", "--model", "test:m", "--store", db, "--json")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if s := summaryOf(t, out); s.Status != "done" || s.Failed != 0 || string(s.Output) != `{"said":"echo: hello"}` {
		t.Errorf("summary %+v", s)
	}
}

func TestRequestMCP(t *testing.T) {
	idea := echoIdea(t, "stdio")
	p := scripted.Solutions(`{"calls":[{"_tool":"t_echo","text":"hello"}],"output":{"said":"?"}}`)
	code, out, errOut := actsScripted(t.Context(), agent.NewRegistry(), p, "request", idea, "--model", "test:m", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, `"_tool": "t_echo"`) {
		t.Errorf("stdout:\n%s", out)
	}
	reqs := p.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Schema), `"t_echo"`) {
		t.Fatalf("requests %+v", reqs)
	}
	// The tool is explicit: the model is not asked for its result.
	if strings.Contains(string(reqs[0].Schema), `"_output":{"type":"object","properties":{"said"`) {
		t.Errorf("the model is asked for t_echo's output: %s", reqs[0].Schema)
	}
}

func TestOfferMCP(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Tool("t_a", json.RawMessage(`{"type":"object"}`))
	reg.Tool("t_b", json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`))
	sys := message.Message{Type: message.TypeText, Role: message.RoleSystem, Text: "Be brief."}
	offer := message.Message{Type: message.TypeTool, Tool: json.RawMessage(`{"t_a":{"type":"object"},"t_b":{"type":"object","properties":{"x":{"type":"string"}}}}`)}
	for _, tt := range []struct {
		name  string
		names []string
		msgs  []message.Message
		want  []message.Message
	}{
		{"no tools", nil, []message.Message{sys}, []message.Message{sys}},
		{"first", []string{"t_a", "t_b"}, []message.Message{sys}, []message.Message{offer, sys}},
		{"the Idea names one", []string{"t_a", "t_b"}, []message.Message{message.Tool("t_b"), sys}, []message.Message{message.Tool("t_b"), sys}},
		{"the Idea defines one", []string{"t_a", "t_b"}, []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`{"t_a":{"type":"object"}}`)}}, []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`{"t_a":{"type":"object"}}`)}}},
		{"other tools", []string{"t_a", "t_b"}, []message.Message{message.Tool("lookup")}, []message.Message{offer, message.Tool("lookup")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := offerMCP(reg, tt.names, tt.msgs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("(-got +want):\n%s", diff)
			}
		})
	}
}

// shout registers a tool that shouts its text back.
func shout(reg *agent.Registry) {
	reg.Tool("shout", json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`))
	reg.Activity("shout", agent.Bind(func(_ context.Context, p struct {
		Text string `json:"text"`
	}) (string, error) {
		return strings.ToUpper(p.Text), nil
	}))
}

// shoutRegistry is a registry with shout alone.
func shoutRegistry() *agent.Registry {
	reg := agent.NewRegistry()
	shout(reg)
	return reg
}

func TestMCPServe(t *testing.T) {
	reg := agent.NewRegistry()
	if err := agent.Func(reg, "greet", "Greets someone.", func(_ context.Context, p struct {
		Name string `json:"name"`
	}) (string, error) {
		return "hello, " + p.Name, nil
	}); err != nil {
		t.Fatal(err)
	}
	shout(reg)
	reg.Tool("guess", json.RawMessage(`{"type":"object","properties":{"_output":{"type":"integer"}}}`))
	// The echoer Idea lists the test server: acts connects it and offers
	// its tool to the Idea's runs, and does not serve it.
	echoer := echoIdea(t, "stdio")
	p := scripted.Solutions(callEcho, answer)
	for _, tt := range []struct {
		name  string
		args  []string
		tools []string
		call  string
		with  string
		want  string // the result's text; "error: TEXT" for an error that says TEXT
	}{
		{"every tool", nil, []string{"greet", "guess", "shout"}, "greet", `{"name":"Ada"}`, `"hello, Ada"`},
		// A latent tool needs a model; with none, its calls fail.
		{"a latent tool", []string{"--tool", "guess"}, []string{"guess"}, "guess", `{}`, `error: agent: invalid plan: call 0 (guess): no provider: the tool has no activity`},
		{"named", []string{"--tool", "shout"}, []string{"shout"}, "shout", `{"text":"hi"}`, `"HI"`},
		{"an Idea", []string{"--tool", "greet", "--idea", "echoer=" + echoer, "--model", "test:m"}, []string{"echoer", "greet"}, "echoer", `{}`, `{"said":"echo: hello"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			session, wait := serveMCP(t, reg, p, append([]string{"mcp", "serve"}, tt.args...)...)
			var names []string
			for tool, err := range session.Tools(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			if diff := cmp.Diff(names, tt.tools); diff != "" {
				t.Errorf("tools (-got +want):\n%s", diff)
			}
			res, err := session.CallTool(t.Context(), &sdk.CallToolParams{Name: tt.call, Arguments: json.RawMessage(tt.with)})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*sdk.TextContent).Text
			if failure, ok := strings.CutPrefix(tt.want, "error: "); ok {
				if !res.IsError || !strings.Contains(text, failure) {
					t.Errorf("%s: isError %v, %s; want an error with %q", tt.call, res.IsError, text, failure)
				}
			} else if res.IsError || text != tt.want {
				t.Errorf("%s: isError %v, %s; want %s", tt.call, res.IsError, text, tt.want)
			}
			// The client closes the server's standard input: it ends.
			if err := session.Close(); err != nil {
				t.Fatal(err)
			}
			if code, stderr := wait(); code != 0 || stderr != "" {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
		})
	}
}

func TestMCPServeErrors(t *testing.T) {
	reg := shoutRegistry()
	idea := writeIdea(t)
	t.Setenv("ACTS_MODEL", "")
	for _, tt := range []struct {
		name string
		reg  *agent.Registry
		args []string
		code int
		want string
	}{
		{"nothing to serve", agent.NewRegistry(), []string{"serve"}, 2, "acts: usage: nothing to serve: the program registers no tools; give --idea NAME=FILE\n"},
		{"activities without tools", activitiesOnly(), []string{"serve"}, 2, "acts: usage: nothing to serve: the program registers activities (charge, price) but no tools; their schemas are in an Idea's tool messages: give --idea NAME=FILE, or register the tools (Registry.Tool)\n"},
		{"no subcommand", reg, []string{}, 2, "acts: usage: mcp takes serve\n"},
		{"an Idea with no model", reg, []string{"serve", "--idea", "capital=" + idea}, 2, "acts: usage: --idea runs a model: give --model (or ACTS_MODEL)\n"},
		{"not NAME=FILE", reg, []string{"serve", "--idea", idea}, 2, `acts: usage: invalid value "` + idea + `" for flag -idea: "` + idea + `" is not NAME=FILE` + "\n"},
		{"two Ideas of one name", reg, []string{"serve", "--idea", "a=" + idea, "--idea", "a=" + idea, "--model", "test:m"}, 2, "acts: usage: --idea a=" + idea + ": two Ideas are named \"a\"\n"},
		{"an unknown tool", reg, []string{"serve", "--tool", "nope"}, 1, `acts: mcp: serve "nope": agent: unknown tool "nope" (registered: shout)`},
		{"a server that dies", reg, []string{"serve", "--idea", "e=" + echoIdea(t, "die"), "--model", "test:m"}, 1, `mcp: server "echo": connect: `},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(t.Context(), append([]string{"mcp"}, tt.args...), scriptedEnv(tt.reg, scripted.New(), &stdout, &stderr))
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) || stdout.Len() != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q", code, stdout.String(), stderr.String(), tt.code, tt.want)
			}
		})
	}
	// A program with no model providers says so.
	var stderr bytes.Buffer
	code := Main(t.Context(), []string{"mcp", "serve", "--idea", "capital=" + idea}, Env{Registry: reg, Stdout: io.Discard, Stderr: &stderr})
	if want := "acts: --idea runs a model, and this program has no model providers: use the acts command (cmd/acts), or set cli.Env.Providers\n"; code != 1 || stderr.String() != want {
		t.Errorf("no providers: exit %d, %q", code, stderr.String())
	}
}

func TestMCPServeInterrupted(t *testing.T) {
	// Ctrl-C stops the server: exit 0, with the client still connected.
	reg := shoutRegistry()
	ctx, cancel := context.WithCancel(t.Context())
	session, wait := serveMCPContext(ctx, t, reg, scripted.New(), "mcp", "serve")
	if _, err := session.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	if code, stderr := wait(); code != 0 || stderr != "" {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	_ = session.Close()
}

// TestMCPServeInterruptCancelsCalls: Ctrl-C stops the calls in flight
// (an Idea's run, a slow tool) and the command ends, rather than waiting
// for them to finish on their own.
func TestMCPServeInterruptCancelsCalls(t *testing.T) {
	reg := agent.NewRegistry()
	started := make(chan struct{})
	ended := make(chan error, 1)
	reg.Tool("slow", json.RawMessage(`{"type":"object"}`))
	reg.Activity("slow", agent.ActivityFunc(func(ctx context.Context, _ *agent.Call) (*agent.Result, error) {
		close(started)
		select {
		case <-ctx.Done():
			ended <- ctx.Err()
		case <-time.After(time.Minute):
			ended <- errors.New("not cancelled")
		}
		return &agent.Result{Value: json.RawMessage(`1`)}, nil
	}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	session, wait := serveMCPContext(ctx, t, reg, scripted.New(), "mcp", "serve")
	go func() {
		_, _ = session.CallTool(t.Context(), &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	}()
	<-started
	cancel()
	exited := make(chan int, 1)
	go func() {
		code, _ := wait()
		exited <- code
	}()
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acts mcp serve still runs 10s after Ctrl-C: it waits for the call in flight")
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the call in flight ended with %v, want context.Canceled", err)
	}
	_ = session.Close()
}

// serveMCP runs acts mcp serve on in-process pipes and connects an SDK
// client to it. wait waits for the command to end and returns its exit
// status and standard error.
func serveMCP(t *testing.T, reg *agent.Registry, p *scripted.Provider, args ...string) (*sdk.ClientSession, func() (int, string)) {
	return serveMCPContext(t.Context(), t, reg, p, args...)
}

func serveMCPContext(ctx context.Context, t *testing.T, reg *agent.Registry, p *scripted.Provider, args ...string) (*sdk.ClientSession, func() (int, string)) {
	t.Helper()
	inR, inW := io.Pipe()   // the client's requests: the command's standard input
	outR, outW := io.Pipe() // the command's standard output: the client's responses
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		env := scriptedEnv(reg, p, outW, &stderr)
		env.Stdin = inR
		code := Main(ctx, args, env)
		// The command leaves its streams open, as they are the caller's.
		outW.Close()
		inR.Close()
		done <- code
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v1"}, nil)
	session, err := client.Connect(t.Context(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v (stderr %q)", err, stderr.String())
	}
	return session, func() (int, string) {
		code := <-done
		return code, stderr.String()
	}
}

// runMessages returns the messages of a run's journal.
func runMessages(t *testing.T, db, id string) []message.Message {
	t.Helper()
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var msgs []message.Message
	for e, err := range st.Entries(t.Context(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == store.EntryMessage {
			var m message.Message
			if err := json.Unmarshal(e.Data, &m); err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, m)
		}
	}
	return msgs
}

func TestPlanValidateMCP(t *testing.T) {
	// plan validate checks an Idea's plan with its MCP servers' tools, as
	// acts run runs it: the tools a server offers are not unknown.
	server, _ := json.Marshal(agent.MCPServer{Command: []string{os.Args[0]}, Env: []string{"ACTS_CLI_TEST_MCP=stdio"}, Prefix: "t_"})
	idea := writeFile(t, "plan.json", `{"schema":{},"context":[{"type":"plan","plan":[{"_tool":"t_echo","text":"†input.text","_outputPath":"†state.echoed"}]}],"mcp":[`+string(server)+`]}`)
	code, out, errOut := acts(t.Context(), agent.NewRegistry(), "plan", "validate", idea, "--input", `[{"text":"a"},{"text":"b"}]`)
	if code != 0 || out != "ok: 1 call, 2 instances\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// A parameter the server's tool does not take is found too.
	bad := writeFile(t, "bad.json", `{"schema":{},"context":[{"type":"plan","plan":[{"_tool":"t_echo","text":1}]}],"mcp":[`+string(server)+`]}`)
	code, out, errOut = acts(t.Context(), agent.NewRegistry(), "plan", "validate", bad, "--input", `{"x":1}`)
	if code != 1 || !strings.Contains(out, "t_echo") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// --structure and graph start no server: a server that cannot start
	// does not matter to them.
	dead, _ := json.Marshal(agent.MCPServer{Command: []string{filepath.Join(t.TempDir(), "missing")}, Prefix: "t_"})
	gone := writeFile(t, "gone.json", `{"schema":{},"context":[{"type":"plan","plan":[{"_tool":"t_echo","text":"x"}]}],"mcp":[`+string(dead)+`]}`)
	if code, out, errOut := acts(t.Context(), agent.NewRegistry(), "plan", "validate", "--structure", gone); code != 0 || out != "ok: 1 call (structure only)\n" {
		t.Errorf("--structure: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := acts(t.Context(), agent.NewRegistry(), "plan", "graph", gone); code != 0 {
		t.Errorf("graph: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := acts(t.Context(), agent.NewRegistry(), "plan", "validate", gone); code == 0 || !strings.Contains(errOut, "gone.json") {
		t.Errorf("a server that cannot start: exit %d, stderr %q", code, errOut)
	}
}

// activitiesOnly is a program's registry with activities bound to tools
// an Idea defines, and no tools of its own.
func activitiesOnly() *agent.Registry {
	reg := agent.NewRegistry()
	noop := agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) { return &agent.Result{}, nil })
	reg.Activity("price", noop)
	reg.Activity("charge", noop)
	return reg
}
