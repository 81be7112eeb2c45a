package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/ojson"
)

// Client is a session with one MCP server, whose tools it registers on
// an [agent.Registry]. It is safe for concurrent use: the activities it
// registers run calls at once, each its own request to the server. The
// caller owns the session: close it once the runs that use its tools
// are over; their calls fail after that.
type Client struct {
	name    string // the server, as errors name it
	prefix  string
	session *sdk.ClientSession
	stderr  *tail     // the program's last lines; nil for other transports
	cmd     *exec.Cmd // the program; nil for other transports

	closeOnce sync.Once
	closeErr  error
}

// Connect connects to the MCP server s describes and performs the MCP
// handshake, waiting for it as long as ctx allows. A server with a
// Command is started as a child process, with s.Env added to this
// process's environment, and spoken to over its standard input and
// output; it runs until [Client.Close], in a process group of its own,
// so that a terminal's Ctrl-C stops the run, not the server under its
// calls. A server with a URL is reached
// over streamable HTTP. The errors say which server failed and how: a
// description that is not valid, a program that does not start, a
// handshake that fails (with the end of what the program wrote to its
// standard error).
func Connect(ctx context.Context, s agent.MCPServer) (*Client, error) {
	name := label(s)
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("mcp: server %q: %w", name, err)
	}
	if s.URL != "" {
		return connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.URL}, name, s.Prefix, nil)
	}
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	if len(s.Env) > 0 {
		cmd.Env = append(os.Environ(), s.Env...)
	}
	stderr := &tail{}
	cmd.Stderr = stderr
	// A program the server started and left running holds its standard
	// error: once the server has exited, stop waiting for it soon, and
	// stop it (stopGroup).
	cmd.WaitDelay = waitDelay
	detach(cmd)
	c, err := connect(ctx, &sdk.CommandTransport{Command: cmd}, name, s.Prefix, stderr)
	if err != nil {
		stopGroup(cmd)
		return nil, err
	}
	c.cmd = cmd
	return c, nil
}

// waitDelay is how long closing a stdio server waits, once its program
// has exited, for the programs it started to let go of its standard
// error, before it stops them.
const waitDelay = time.Second

// ConnectTransport is [Connect] over a transport of the caller's: an
// in-memory one, or an HTTP transport with its own http.Client. name
// names the server in errors; prefix is put before its tools' names, as
// [agent.MCPServer.Prefix] says.
func ConnectTransport(ctx context.Context, t sdk.Transport, name, prefix string) (*Client, error) {
	if t == nil {
		return nil, fmt.Errorf("mcp: server %q: nil transport", name)
	}
	return connect(ctx, t, name, prefix, nil)
}

func connect(ctx context.Context, t sdk.Transport, name, prefix string, stderr *tail) (*Client, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "acts", Version: version()}, nil)
	session, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: connect: %w%s", name, err, stderr.note())
	}
	return &Client{name: name, prefix: prefix, session: session, stderr: stderr}, nil
}

// Session returns the SDK session, for what this package does not wrap
// (resources, prompts). It stays the Client's: close the Client, not it.
func (c *Client) Session() *sdk.ClientSession { return c.session }

// Close ends the session; a stdio server's program is asked to exit and
// is stopped if it does not, and on Unix the programs it started and
// left running, in its process group, are stopped too. Close may be
// called more than once.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		err := c.session.Close()
		if c.cmd != nil {
			stopGroup(c.cmd)
			if errors.Is(err, exec.ErrWaitDelay) { // the programs left behind, stopped now
				err = nil
			}
		}
		if err != nil {
			c.closeErr = fmt.Errorf("mcp: server %q: close: %w", c.name, err)
		}
	})
	return c.closeErr
}

// Register lists the server's tools, every page of them, and registers
// each on reg (nil means [agent.DefaultRegistry]) under the server's
// prefix and the tool's name, returning the names registered, in the
// server's order.
//
// A tool's definition is its input schema with its description, and its
// output schema, when it has one, as _output; their local $refs point
// to the definition's $defs, where their definitions move as "input.x"
// and "output.x" (a ref to the input's root names it "input"), since
// the definition is embedded in the schema of a solution. Its
// activity calls the tool with the call's parameters, meta-properties
// left out, and returns the result's structuredContent when there is
// one, else its text content and the text of the resources it embeds:
// the JSON value it holds if it is JSON, else the text as a JSON string
// (null when there is no text). A result
// with isError set fails the call with a [*ToolError] carrying its text.
//
// Register registers every tool or, on error, none: a name taken
// already ([ErrClash]) or a schema Acts cannot use ([ErrSchema]) is
// found before anything is registered. A run offers a registered tool
// to the model with a tool message that names it,
// {"type":"tool","tool":"name"}.
func (c *Client) Register(ctx context.Context, reg *agent.Registry) ([]string, error) {
	tools, err := c.tools(ctx)
	if err != nil {
		return nil, err
	}
	if err := register(reg, tools); err != nil {
		return nil, err
	}
	return names(tools), nil
}

// ConnectIdea connects every MCP server of idea.MCP, in order, and
// registers all their tools on reg (nil means [agent.DefaultRegistry]),
// as [Client.Register] does: it returns the names registered and a
// function that closes every session, to call once the runs that use the
// tools are over. On error, nothing is registered, what was opened is
// closed, and the error names the server. An Idea with no servers gives
// a closer that does nothing.
//
// A tool is offered to the model only by a tool message in the run's
// context; to offer them all, put reg.Offer(tools...), one message
// with every definition, before the Idea's context, as acts run does,
// when tools is not empty: Offer with no names offers every registered
// tool.
func ConnectIdea(ctx context.Context, idea *agent.Idea, reg *agent.Registry) (closeAll func() error, tools []string, err error) {
	var clients []*Client
	closeAll = func() error {
		var errs []error
		for _, c := range clients {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	if idea == nil {
		return closeAll, nil, nil
	}
	var all []tool
	for _, s := range idea.MCP {
		c, err := Connect(ctx, s)
		if err != nil {
			_ = closeAll()
			return nil, nil, err
		}
		clients = append(clients, c)
		ts, err := c.tools(ctx)
		if err != nil {
			_ = closeAll()
			return nil, nil, err
		}
		all = append(all, ts...)
	}
	if err := register(reg, all); err != nil {
		_ = closeAll()
		return nil, nil, err
	}
	return closeAll, names(all), nil
}

// tool is an MCP tool made ready for a registry.
type tool struct {
	server   string // the server, as errors name it
	orig     string // the tool's name on the server
	name     string // as registered: the prefix and the tool's name
	def      json.RawMessage
	activity agent.Activity
}

func names(tools []tool) []string {
	if len(tools) == 0 {
		return nil
	}
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.name
	}
	return out
}

// tools lists the server's tools and prepares each for a registry.
func (c *Client) tools(ctx context.Context) ([]tool, error) {
	var out []tool
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: list tools: %w%s", c.name, err, c.closedNote(err))
		}
		if t.Name == "" {
			return nil, fmt.Errorf("mcp: server %q: a tool has no name", c.name)
		}
		name := c.prefix + t.Name
		fix := "give the server a prefix"
		if c.prefix != "" { // the prefix made the name so
			fix = fmt.Sprintf("give the server a prefix other than %q", c.prefix)
		}
		if strings.HasPrefix(name, "_") {
			return nil, fmt.Errorf("mcp: server %q: tool %q: a name starting with \"_\" is kept for meta-properties; %s", c.name, t.Name, fix)
		}
		if strings.HasPrefix(name, "Tool.") { // "Tool.x" is another name of the tool x
			return nil, fmt.Errorf("mcp: server %q: tool %q: a name starting with \"Tool.\" names the tool after it in Acts; %s", c.name, t.Name, fix)
		}
		def, err := toolDef(t)
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: tool %q: %w", c.name, t.Name, err)
		}
		out = append(out, tool{server: c.name, orig: t.Name, name: name, def: def, activity: c.activity(t.Name)})
	}
	return out, nil
}

// register registers tools on reg, all or none.
func register(reg *agent.Registry, tools []tool) error {
	if reg == nil {
		reg = agent.DefaultRegistry
	}
	// Errors name the server and its tool: with several servers, the
	// user must know whose prefix to set.
	seen := map[string]tool{}
	activities := reg.ActivityNames()
	for _, t := range tools {
		at := fmt.Sprintf("mcp: server %q: tool %q", t.server, t.orig)
		if other, ok := seen[t.name]; ok {
			return fmt.Errorf("%s: %w: server %q has a tool %q too; give one of them a prefix", at, ErrClash, other.server, t.name)
		}
		seen[t.name] = t
		if _, err := reg.LookupTool(t.name); err == nil {
			return fmt.Errorf("%s: %w: a tool %q is registered already; give the server a prefix", at, ErrClash, t.name)
		}
		if _, found := slices.BinarySearch(activities, t.name); found {
			return fmt.Errorf("%s: %w: an activity %q is registered already; give the server a prefix", at, ErrClash, t.name)
		}
	}
	for _, t := range tools {
		// The activity first: a tool without it would be latent, and the
		// model would make its results up.
		if err := registerOnce(func() { reg.Activity(t.name, t.activity) }); err != nil {
			return fmt.Errorf("mcp: server %q: tool %q: %w: %w", t.server, t.orig, ErrClash, err)
		}
		if err := registerOnce(func() { reg.Tool(t.name, t.def) }); err != nil {
			return fmt.Errorf("mcp: server %q: tool %q: %w: %w", t.server, t.orig, ErrClash, err)
		}
	}
	return nil
}

// registerOnce runs a registration, which panics on a name taken: that
// panic is an error here, since the names come from a server.
func registerOnce(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	f()
	return nil
}

// activity returns the activity that calls the server's tool name.
func (c *Client) activity(name string) agent.Activity {
	return agent.ActivityFunc(func(ctx context.Context, call *agent.Call) (*agent.Result, error) {
		res, err := c.session.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: call.Args()})
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: call %q: %w%s", c.name, name, err, c.closedNote(err))
		}
		if res.NeedsInput() {
			return nil, fmt.Errorf("mcp: server %q: tool %q asks the client for input, which Acts does not give", c.name, name)
		}
		if res.IsError {
			return nil, &ToolError{Server: c.name, Tool: name, Text: errorText(res)}
		}
		v, err := resultValue(res)
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: tool %q: result: %w", c.name, name, err)
		}
		return &agent.Result{Value: v}, nil
	})
}

// closedNote is the end of a stdio server's standard error when err says
// the connection is gone: most likely the program died, and said why.
// The session is closed then, which waits for the program to end, so
// that all it wrote is read.
func (c *Client) closedNote(err error) string {
	if c.stderr == nil || !errors.Is(err, io.EOF) && !errors.Is(err, sdk.ErrConnectionClosed) {
		return ""
	}
	_ = c.Close()
	return c.stderr.note()
}

// resultValue returns the value of a successful tool result: its
// structured content, else its text, as JSON.
func resultValue(res *sdk.CallToolResult) (json.RawMessage, error) {
	if res.StructuredContent != nil {
		return encode(res.StructuredContent)
	}
	text, ok := textOf(res.Content)
	if !ok {
		return json.RawMessage(`null`), nil
	}
	var b bytes.Buffer
	if json.Compact(&b, bytes.TrimSpace([]byte(text))) == nil { // it is JSON
		return b.Bytes(), nil
	}
	return ojson.Quote(text), nil
}

// errorText returns what a result with isError set says.
func errorText(res *sdk.CallToolResult) string {
	if text, ok := textOf(res.Content); ok && strings.TrimSpace(text) != "" {
		return text
	}
	if res.StructuredContent != nil {
		if b, err := encode(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return "the tool failed and did not say why"
}

// textOf joins the text contents of a result and the text of the
// resources it embeds (a file a tool read), a line each; ok is false when
// it has none.
func textOf(content []sdk.Content) (text string, ok bool) {
	var parts []string
	for _, c := range content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.EmbeddedResource:
			if c.Resource != nil && c.Resource.Blob == nil {
				parts = append(parts, c.Resource.Text)
			}
		}
	}
	return strings.Join(parts, "\n"), len(parts) > 0
}

// encode marshals v compactly, without escaping HTML characters: the
// value is for a model and a log, not a web page.
func encode(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// label returns how errors name a server: its name, else its URL, else
// its program.
func label(s agent.MCPServer) string {
	switch {
	case s.Name != "":
		return s.Name
	case s.URL != "":
		return s.URL
	case len(s.Command) > 0:
		return s.Command[0]
	}
	return ""
}

// version is this module's version, for the MCP handshake.
func version() string {
	const module = "github.com/augceo/agent"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == module && bi.Main.Version != "" {
			return bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == module {
				return d.Version
			}
		}
	}
	return "(devel)"
}

// tail keeps the last bytes a server program wrote to its standard
// error, to say why it failed. Its methods accept a nil *tail.
type tail struct {
	mu sync.Mutex
	b  []byte
}

// tailSize is how much of a program's standard error is kept.
const tailSize = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailSize {
		cut := len(t.b) - tailSize
		for cut < len(t.b) && !utf8.RuneStart(t.b[cut]) { // whole runes: the text goes to a log and a model
			cut++
		}
		t.b = append(t.b[:0], t.b[cut:]...)
	}
	return len(p), nil
}

// note returns the kept standard error as the end of an error message,
// or "" when there is none.
func (t *tail) note() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	return " (stderr: " + s + ")"
}
