package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/mcp"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/schema"
)

// memClient connects to srv over an in-memory transport.
func memClient(t *testing.T, srv *sdk.Server, prefix string) *mcp.Client {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	c, err := mcp.ConnectTransport(ctx, ct, "mem", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// httpServer serves srv over streamable HTTP.
func httpServer(t *testing.T, srv *sdk.Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts
}

// stdioServer describes the test binary run as the test server.
func stdioServer(prefix string) agent.MCPServer {
	return agent.MCPServer{Name: "calc", Command: []string{os.Args[0]}, Env: []string{"ACTS_MCP_TEST_SERVER=stdio"}, Prefix: prefix}
}

// stdioRegistry returns a registry with the tools of the test server,
// run as a child process, whose session closes when the test ends.
func stdioRegistry(t *testing.T, prefix string) *agent.Registry {
	t.Helper()
	c, err := mcp.Connect(t.Context(), stdioServer(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	reg := agent.NewRegistry()
	if _, err := c.Register(t.Context(), reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

var testTools = []string{"add", "crash", "echo", "fail", "json_text", "nested"}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

func TestRegisterDefinitions(t *testing.T) {
	reg := agent.NewRegistry()
	names, err := memClient(t, testServer(), "t_").Register(context.Background(), reg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(prefixed("t_", testTools), names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ tool, want string }{
		{"t_add", `{"type":"object","description":"Adds two numbers.","properties":{"a":{"type":"number"},"b":{"type":"number"},"_output":{"properties":{"sum":{"type":"number"}},"required":["sum"],"type":"object"}},"required":["a","b"]}`},
		{"t_json_text", `{"type":"object"}`},
		// Local refs are inlined, $defs dropped; a $ref's siblings join the schema it names.
		{"t_nested", `{"type":"object","description":"Returns the point's x.","properties":{"at":{"$ref":"#/$defs/input.point","description":"Where."}},"required":["at"],"$defs":{"input.point":{"properties":{"x":{"type":"integer"}},"required":["x"],"type":"object"}}}`},
	} {
		got, err := reg.LookupTool(tt.tool)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.tool, got, tt.want)
		}
	}
}

// TestRegisterCalls runs the tools' activities as a plan: no model.
func TestRegisterCalls(t *testing.T) {
	reg := agent.NewRegistry()
	if _, err := memClient(t, testServer(), "").Register(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	plan := []json.RawMessage{
		json.RawMessage(`{"_tool":"add","a":40,"b":2,"_outputPath":"†state.add"}`),
		json.RawMessage(`{"_tool":"echo","text":"<hello> & not JSON","_outputPath":"†state.echo"}`),
		json.RawMessage(`{"_tool":"json_text","_outputPath":"†state.json"}`),
		json.RawMessage(`{"_tool":"nested","at":{"x":7},"_outputPath":"†state.nested"}`),
		json.RawMessage(`{"_tool":"fail","why":"no reason","_outputPath":"†state.fail"}`),
	}
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, want string }{
		{"add", `{"sum":42}`},
		{"echo", `"<hello> & not JSON"`},
		{"json", `{"x":[1,2]}`},
		{"nested", `{"x":7}`},
	} {
		got, err := res.Log.Lookup("state", []string{tt.path})
		if err != nil || string(got) != tt.want {
			t.Errorf("state.%s = %s, %v; want %s", tt.path, got, err, tt.want)
		}
	}
	var errs []string
	for _, m := range res.Log.All() {
		if m.Type == message.TypeError {
			errs = append(errs, m.Error)
		}
	}
	want := []string{`runtime error in fail: mcp: server "mem": tool "fail": boom: no reason`}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestToolError(t *testing.T) {
	reg := agent.NewRegistry()
	if _, err := memClient(t, testServer(), "").Register(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	var got error
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"fail","why":"x","_outputPath":"†state.fail"}`)}
	for ev, err := range agent.PlanEvents(context.Background(), agent.Config{Registry: reg}, plan, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventCallFailed {
			got = ev.Err
		}
	}
	te, ok := errors.AsType[*mcp.ToolError](got)
	if !ok || *te != (mcp.ToolError{Server: "mem", Tool: "fail", Text: "boom: x"}) {
		t.Errorf("got %v, want a *ToolError", got)
	}
}

func TestRegisterHTTP(t *testing.T) {
	ts := httpServer(t, testServer())
	ctx := context.Background()
	c, err := mcp.Connect(ctx, agent.MCPServer{URL: ts.URL, Prefix: "h_"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reg := agent.NewRegistry()
	names, err := c.Register(ctx, reg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(prefixed("h_", testTools), names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"h_add","a":1.5,"b":2,"_outputPath":"†state.sum"}`)}
	res, err := agent.ExecutePlan(ctx, agent.Config{Registry: reg}, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.Log.Lookup("state", []string{"sum"}); string(got) != `{"sum":3.5}` {
		t.Errorf("sum = %s", got)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestStdioRun drives the agent loop, with a scripted model, through a
// tool of a server running in a child process.
func TestStdioRun(t *testing.T) {
	ctx := context.Background()
	reg := stdioRegistry(t, "calc_")
	model := scripted.Solutions(
		`{"calls":[{"_tool":"calc_add","a":"†input.x","b":2,"_outputPath":"†state.sum"}],"output":null}`,
		`{"calls":[],"output":{"total":42}}`,
	)
	msgs := []message.Message{{Type: message.TypeTool, Tool: json.RawMessage(`"calc_add"`)}, message.Data(message.KindInput, json.RawMessage(`{"x":40}`))}
	res, err := agent.Run(ctx, agent.Config{Provider: model, Registry: reg}, json.RawMessage(`{"type":"object"}`), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.Log.Lookup("state", []string{"sum"}); string(got) != `{"sum":42}` {
		t.Errorf("state.sum = %s", got)
	}
	if string(res.Solution.Output) != `{"total":42}` {
		t.Errorf("output = %s", res.Solution.Output)
	}
	// The model saw the tool: its name, description and parameters, but
	// not its _output, which the server produces.
	schema := string(model.Requests()[0].Schema)
	for _, want := range []string{`"const":"calc_add"`, `Adds two numbers.`, `"a":{"anyOf":[{"type":"number"}`} {
		if !strings.Contains(schema, want) {
			t.Errorf("the request schema has no %s:\n%s", want, schema)
		}
	}
	if strings.Contains(schema, `"sum"`) {
		t.Errorf("the request schema shows the explicit tool's _output:\n%s", schema)
	}
}

// TestStdioCrash: a server that dies during a call fails the call, and
// the error says what the program wrote to its standard error.
func TestStdioCrash(t *testing.T) {
	ctx := context.Background()
	reg := stdioRegistry(t, "")
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"crash","_outputPath":"†state.x"}`)}
	res, err := agent.ExecutePlan(ctx, agent.Config{Registry: reg}, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, m := range res.Log.All() {
		if m.Type == message.TypeError {
			got = m.Error
		}
	}
	if !strings.Contains(got, `mcp: server "calc": call "crash"`) || !strings.Contains(got, "stderr: out of memory") {
		t.Errorf("error = %q", got)
	}
}

func TestConnectErrors(t *testing.T) {
	for _, tt := range []struct {
		name   string
		server agent.MCPServer
		want   []string
	}{
		{"both", agent.MCPServer{Name: "x", Command: []string{"a"}, URL: "http://b"}, []string{`mcp: server "x": both command and url are set`}},
		{"neither", agent.MCPServer{Name: "x"}, []string{`mcp: server "x": give a command or a url`}},
		{"bad env", agent.MCPServer{Command: []string{"a"}, Env: []string{"A"}}, []string{`mcp: server "a": env entry "A" is not KEY=VALUE`}},
		{"no program", agent.MCPServer{Command: []string{"/nonexistent/mcp-server"}}, []string{`mcp: server "/nonexistent/mcp-server": connect:`, "no such file"}},
		{"dies", agent.MCPServer{Name: "db", Command: []string{os.Args[0]}, Env: []string{"ACTS_MCP_TEST_SERVER=die"}}, []string{`mcp: server "db": connect:`, "(stderr: cannot open the database)"}},
		{"no server", agent.MCPServer{URL: "http://127.0.0.1:1/mcp"}, []string{`mcp: server "http://127.0.0.1:1/mcp": connect:`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := mcp.Connect(context.Background(), tt.server)
			if err == nil {
				c.Close()
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want %q in it", err, w)
				}
			}
		})
	}
}

func TestRegisterClash(t *testing.T) {
	ctx := context.Background()
	reg := agent.NewRegistry()
	reg.Tool("t_echo", json.RawMessage(`{"type":"object"}`))
	_, err := memClient(t, testServer(), "t_").Register(ctx, reg)
	if !errors.Is(err, mcp.ErrClash) || !strings.Contains(err.Error(), `"t_echo"`) {
		t.Fatalf("got %v, want ErrClash naming t_echo", err)
	}
	if _, err := reg.LookupTool("t_add"); err == nil {
		t.Error("t_add was registered: a clash must register nothing")
	}
	// The same server twice, in one registry.
	reg = agent.NewRegistry()
	if _, err := memClient(t, testServer(), "").Register(ctx, reg); err != nil {
		t.Fatal(err)
	}
	if _, err := memClient(t, testServer(), "").Register(ctx, reg); !errors.Is(err, mcp.ErrClash) {
		t.Errorf("got %v, want ErrClash", err)
	}
	// An activity of the name, without a tool.
	reg = agent.NewRegistry()
	reg.Activity("echo", agent.ActivityFunc(func(context.Context, *agent.Call) (*agent.Result, error) { return nil, nil }))
	if _, err := memClient(t, testServer(), "").Register(ctx, reg); !errors.Is(err, mcp.ErrClash) || !strings.Contains(err.Error(), `activity "echo"`) {
		t.Errorf("got %v, want ErrClash about the activity", err)
	}
	if names := reg.ToolNames(); len(names) != 0 {
		t.Errorf("registered %q: a clash must register nothing", names)
	}
}

// A recursive input or output schema keeps its recursion: its definitions
// go to the tool's $defs, named after where they come from, and its refs
// to its own root name the input itself, not the tool with its _output.
func TestRegisterRecursiveSchema(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "rec", Version: "v1"}, nil)
	srv.AddTool(&sdk.Tool{
		Name:         "walk",
		InputSchema:  json.RawMessage(`{"type":"object","$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},"properties":{"list":{"$ref":"#/$defs/n"},"again":{"$ref":"#"}},"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"rest":{"$ref":"#"}},"required":["n"]}`),
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
	reg := agent.NewRegistry()
	if _, err := memClient(t, srv, "").Register(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	def, err := reg.LookupTool("walk")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"list":{"$ref":"#/$defs/input.n"}`, `"again":{"$ref":"#/$defs/input"}`, `"_output":{"$ref":"#/$defs/output"}`, `"rest":{"$ref":"#/$defs/output"}`} {
		if !strings.Contains(string(def), want) {
			t.Errorf("the definition lacks %s:\n%s", want, def)
		}
	}
	c, err := schema.Compile(def)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(json.RawMessage(`{"list":{"next":{"next":{}}},"again":{"again":{"list":{}}}}`)); err != nil {
		t.Errorf("a nested call: %v", err)
	}
	if err := c.Validate(json.RawMessage(`{"again":{"_output":{"n":1}}}`)); err == nil {
		t.Errorf("the input's root took _output: it names the tool, not the input")
	}
}

// A draft-07 input schema with "definitions", as zod-to-json-schema
// writes by default, registers, and its refs resolve in the tool.
func TestRegisterDraft07Schema(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "d7", Version: "v1"}, nil)
	srv.AddTool(&sdk.Tool{
		Name:        "at",
		InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"p":{"$ref":"#/definitions/point"}},"required":["p"],"definitions":{"point":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}}`),
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
	reg := agent.NewRegistry()
	if _, err := memClient(t, srv, "").Register(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	def, _ := reg.LookupTool("at")
	c, err := schema.Compile(def)
	if err != nil {
		t.Fatalf("%v\n%s", err, def)
	}
	if err := c.Validate(json.RawMessage(`{"p":{"x":1}}`)); err != nil {
		t.Error(err)
	}
	if err := c.Validate(json.RawMessage(`{"p":{"x":"1"}}`)); err == nil {
		t.Error("a point with a string x is valid")
	}
}

func TestRegisterInvalidSchema(t *testing.T) {
	for _, tt := range []struct {
		name, input, output, want string
	}{
		{"reserved parameter", `{"type":"object","properties":{"_secret":{"type":"string"}}}`, "", `parameter "_secret"`},
		{"not an object", `{"type":"object","properties":{"a":{"type":"nope"}}}`, "", `mcp: invalid tool schema`},
		{"dangling ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`, "", `invalid ref: "#/$defs/none" at /properties/a/$ref points nowhere`},
		{"remote ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "", `mcp: invalid tool schema`},
		{"bad output", `{"type":"object"}`, `{"type":7}`, `mcp: invalid tool schema`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := sdk.NewServer(&sdk.Implementation{Name: "bad", Version: "v1"}, nil)
			tool := &sdk.Tool{Name: "bad", InputSchema: json.RawMessage(tt.input)}
			if tt.output != "" {
				tool.OutputSchema = json.RawMessage(tt.output)
			}
			srv.AddTool(tool, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
			reg := agent.NewRegistry()
			_, err := memClient(t, srv, "").Register(context.Background(), reg)
			if !errors.Is(err, mcp.ErrSchema) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `mcp: server "mem": tool "bad": `) {
				t.Errorf("got %v, want ErrSchema with %q", err, tt.want)
			}
		})
	}
}

func TestConnectIdea(t *testing.T) {
	ctx := context.Background()
	a, b := httpServer(t, testServer()), httpServer(t, testServer())
	idea, err := agent.ParseIdea([]byte(`{"schema":{},"context":[],"mcp":[
		{"name":"a","url":"` + a.URL + `","prefix":"a_"},
		{"name":"b","url":"` + b.URL + `","prefix":"b_"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	reg := agent.NewRegistry()
	closeAll, tools, err := mcp.ConnectIdea(ctx, idea, reg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(prefixed("a_", testTools), prefixed("b_", testTools)...), tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"b_add","a":1,"b":1,"_outputPath":"†state.sum"}`)}
	res, err := agent.ExecutePlan(ctx, agent.Config{Registry: reg}, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.Log.Lookup("state", []string{"sum"}); string(got) != `{"sum":2}` {
		t.Errorf("sum = %s", got)
	}
	if err := closeAll(); err != nil {
		t.Errorf("close: %v", err)
	}

	// Two servers whose tools clash: nothing is registered.
	idea.MCP[1].Prefix = "a_"
	reg = agent.NewRegistry()
	if _, _, err := mcp.ConnectIdea(ctx, idea, reg); !errors.Is(err, mcp.ErrClash) {
		t.Fatalf("got %v, want ErrClash", err)
	}
	if _, err := reg.LookupTool("a_add"); err == nil {
		t.Error("a_add was registered")
	}

	// A server that cannot be reached fails the whole Idea, naming it.
	idea.MCP[1] = agent.MCPServer{Name: "gone", URL: "http://127.0.0.1:1/mcp"}
	if _, _, err := mcp.ConnectIdea(ctx, idea, agent.NewRegistry()); err == nil || !strings.HasPrefix(err.Error(), `mcp: server "gone": connect:`) {
		t.Errorf("got %v", err)
	}

	// No servers: nothing to close.
	closeAll, tools, err = mcp.ConnectIdea(ctx, &agent.Idea{}, agent.NewRegistry())
	if err != nil || tools != nil || closeAll() != nil {
		t.Errorf("no servers: %v, %v", tools, err)
	}
}

// TestRegisterConcurrentCalls runs calls at once through one session.
func TestRegisterConcurrentCalls(t *testing.T) {
	reg := agent.NewRegistry()
	if _, err := memClient(t, testServer(), "").Register(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	var plan []json.RawMessage
	for i := range 20 {
		plan = append(plan, json.RawMessage(fmt.Sprintf(`{"_tool":"add","a":%d,"b":1,"_outputPath":"†state.sums.%d"}`, i, i)))
	}
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg, Concurrency: 8}, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		got, err := res.Log.Lookup("state", []string{"sums", fmt.Sprint(i)})
		if want := fmt.Sprintf(`{"sum":%d}`, i+1); err != nil || string(got) != want {
			t.Errorf("state.sums.%d = %s, %v; want %s", i, got, err, want)
		}
	}
}

// TestCallCancelled: a call that the run's cancellation cuts short fails
// with the context's error, which a durable run takes for a call to run
// again on resume, not for a failed one.
func TestCallCancelled(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "v1"}, nil)
	started := make(chan struct{})
	srv.AddTool(&sdk.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	reg := agent.NewRegistry()
	if _, err := memClient(t, srv, "").Register(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	var got error
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"wait","_outputPath":"†state.w"}`)}
	for ev, err := range agent.PlanEvents(ctx, agent.Config{Registry: reg}, plan, nil) {
		if err == nil && ev.Kind == agent.EventCallFailed {
			got = ev.Err
		}
	}
	if !errors.Is(got, context.Canceled) {
		t.Errorf("the call failed with %v, want context.Canceled", got)
	}
}

// TestResultContent: a result's value is its text, and the text of the
// resources it embeds (a file a tool read, say), a line each; images and
// binary resources are left out.
func TestResultContent(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G'}
	srv := sdk.NewServer(&sdk.Implementation{Name: "content", Version: "v1"}, nil)
	for _, tt := range []struct {
		tool    string
		content []sdk.Content
	}{
		{"file", []sdk.Content{
			&sdk.TextContent{Text: "successfully downloaded text file"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "repo://a/README.md", MIMEType: "text/markdown", Text: "# Hello"}},
		}},
		{"json_file", []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.json", Text: `{"a": 1}`}}}},
		{"mixed", []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.ImageContent{Data: png, MIMEType: "image/png"}, &sdk.TextContent{Text: "b"}}},
		{"image", []sdk.Content{&sdk.ImageContent{Data: png, MIMEType: "image/png"}}},
		{"blob", []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.png", MIMEType: "image/png", Blob: png}}}},
	} {
		srv.AddTool(&sdk.Tool{Name: tt.tool, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: tt.content}, nil
			})
	}
	reg := agent.NewRegistry()
	if _, err := memClient(t, srv, "").Register(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	var plan []json.RawMessage
	for _, tool := range []string{"file", "json_file", "mixed", "image", "blob"} {
		plan = append(plan, json.RawMessage(`{"_tool":"`+tool+`","_outputPath":"†state.`+tool+`"}`))
	}
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, want string }{
		{"file", `"successfully downloaded text file\n# Hello"`},
		{"json_file", `{"a":1}`},
		{"mixed", `"a\nb"`},
		{"image", `null`},
		{"blob", `null`},
	} {
		got, err := res.Log.Lookup("state", []string{tt.path})
		if err != nil || string(got) != tt.want {
			t.Errorf("state.%s = %s, %v; want %s", tt.path, got, err, tt.want)
		}
	}
}

// TestConnectIdeaClashNamesServers: with several servers, a clash says
// which server's tool it is, and which other server's tool it meets, so
// that the user knows whose prefix to set.
func TestConnectIdeaClashNamesServers(t *testing.T) {
	ctx := context.Background()
	a, b := httpServer(t, testServer()), httpServer(t, testServer())
	idea := &agent.Idea{MCP: []agent.MCPServer{
		{Name: "a", URL: a.URL, Prefix: "x_"},
		{Name: "b", URL: b.URL, Prefix: "x_"},
	}}
	_, _, err := mcp.ConnectIdea(ctx, idea, agent.NewRegistry())
	if want := `mcp: server "b": tool "add": mcp: tool name taken: server "a" has a tool "x_add" too; give one of them a prefix`; !errors.Is(err, mcp.ErrClash) || err == nil || err.Error() != want {
		t.Errorf("two servers:\n got %v\nwant %s", err, want)
	}

	reg := agent.NewRegistry()
	reg.Tool("x_echo", json.RawMessage(`{"type":"object"}`))
	idea.MCP = idea.MCP[1:]
	_, _, err = mcp.ConnectIdea(ctx, idea, reg)
	if want := `mcp: server "b": tool "echo": mcp: tool name taken: a tool "x_echo" is registered already; give the server a prefix`; !errors.Is(err, mcp.ErrClash) || err == nil || err.Error() != want {
		t.Errorf("a registered tool:\n got %v\nwant %s", err, want)
	}
}

// TestRegisterToolDotName: in Acts "Tool.x" names the tool x, so a
// server's tool named "Tool.x" would be registered and never reachable.
// Register refuses it, as it does a name a prefix made so, and a prefix
// makes it usable.
func TestRegisterToolDotName(t *testing.T) {
	newServer := func() *sdk.Server {
		srv := sdk.NewServer(&sdk.Implementation{Name: "dots", Version: "v1"}, nil)
		srv.AddTool(&sdk.Tool{Name: "Tool.search", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found"}}}, nil
			})
		return srv
	}
	reg := agent.NewRegistry()
	_, err := memClient(t, newServer(), "").Register(context.Background(), reg)
	if want := `mcp: server "mem": tool "Tool.search": a name starting with "Tool." names the tool after it in Acts; give the server a prefix`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if names := reg.ToolNames(); len(names) != 0 {
		t.Errorf("registered %v", names)
	}
	_, err = memClient(t, newServer(), "_").Register(context.Background(), reg)
	if want := `mcp: server "mem": tool "Tool.search": a name starting with "_" is kept for meta-properties; give the server a prefix other than "_"`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	names, err := memClient(t, newServer(), "d_").Register(context.Background(), reg)
	if err != nil || len(names) != 1 || names[0] != "d_Tool.search" {
		t.Fatalf("with a prefix: %v, %v", names, err)
	}
	plan := []json.RawMessage{json.RawMessage(`{"_tool":"d_Tool.search","_outputPath":"†state.r"}`)}
	res, err := agent.ExecutePlan(context.Background(), agent.Config{Registry: reg}, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res.Log.Lookup("state", []string{"r"}); string(got) != `"found"` {
		t.Errorf("state.r = %s", got)
	}
}

// TestRegisterNamelessTool: a server's tool with no name is refused as
// such, not reported as a name taken, and nothing is registered.
func TestRegisterNamelessTool(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "nameless", Version: "v1"}, nil)
	for _, n := range []string{"a", ""} {
		srv.AddTool(&sdk.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
	}
	reg := agent.NewRegistry()
	_, err := memClient(t, srv, "p_").Register(context.Background(), reg)
	if want := `mcp: server "mem": a tool has no name`; err == nil || err.Error() != want || errors.Is(err, mcp.ErrClash) {
		t.Errorf("got %v, want %s", err, want)
	}
	if names := append(reg.ToolNames(), reg.ActivityNames()...); len(names) != 0 {
		t.Errorf("registered %v", names)
	}
}

func init() {
	// A server that dies at once after writing more to its standard
	// error than the client keeps, in two-byte runes.
	serverModes["die_long"] = func() {
		fmt.Fprintln(os.Stderr, strings.Repeat("é", 1500))
		os.Exit(2)
	}
}

// TestConnectStderrWhole: the end of a dead server's standard error that
// an error quotes starts on a rune, so the error is valid UTF-8 (as a
// log and a model take it) whatever the length of what the server wrote.
func TestConnectStderrWhole(t *testing.T) {
	c, err := mcp.Connect(context.Background(), agent.MCPServer{Name: "db", Command: []string{os.Args[0]}, Env: []string{"ACTS_MCP_TEST_SERVER=die_long"}})
	if err == nil {
		c.Close()
		t.Fatal("no error")
	}
	if got := err.Error(); !utf8.ValidString(got) || !strings.Contains(got, "(stderr: é") || !strings.HasSuffix(got, "é)") {
		t.Errorf("got %q, want the end of the server's standard error, whole runes", got)
	}
}
