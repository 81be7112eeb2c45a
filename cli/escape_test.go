package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/augceo/agent"
	"github.com/augceo/agent/internal/openaitest"
)

func TestEscape(t *testing.T) {
	for _, tt := range []struct {
		in, line, text, json string
	}{
		{"plain †state.x ← ①", "plain †state.x ← ①", "plain †state.x ← ①", "plain †state.x ← ①"},
		{"\x1b[2J\x1b[31mred", `\x1b[2J\x1b[31mred`, `\x1b[2J\x1b[31mred`, `\u001b[2J\u001b[31mred`},
		{"over\rwrite", `over\rwrite`, `over\rwrite`, `over\u000dwrite`},
		{"back\bspace\x00\x7f", `back\x08space\x00\x7f`, `back\x08space\x00\x7f`, `back\u0008space\u0000\u007f`},
		{"two\nlines\tand tab", `two\nlines\tand tab`, "two\nlines\tand tab", "two\nlines\tand tab"},
		{"c1 \u009b31m \u0085", `c1 \u009b31m \u0085`, `c1 \u009b31m \u0085`, `c1 \u009b31m \u0085`},
		{"bidi \u202eevil\u2066", `bidi \u202eevil\u2066`, `bidi \u202eevil\u2066`, `bidi \u202eevil\u2066`},
		{"sep\u2028x", `sep\u2028x`, "sep\u2028x", "sep\u2028x"},
		{"bad \xff\xc3 utf8", `bad \xff\xc3 utf8`, `bad \xff\xc3 utf8`, `bad \ufffd\ufffd utf8`},
		{`already \x1b`, `already \x1b`, `already \x1b`, `already \x1b`},
	} {
		if got := escapeLine(tt.in); got != tt.line {
			t.Errorf("escapeLine(%q) = %q, want %q", tt.in, got, tt.line)
		}
		if got := escapeText(tt.in); got != tt.text {
			t.Errorf("escapeText(%q) = %q, want %q", tt.in, got, tt.text)
		}
		if got := escapeJSON(tt.in); got != tt.json {
			t.Errorf("escapeJSON(%q) = %q, want %q", tt.in, got, tt.json)
		}
		if got := escapeLine(escapeLine(tt.in)); got != tt.line {
			t.Errorf("escaping %q twice gives %q", tt.in, got)
		}
	}
	// JSON stays valid JSON with the same value.
	raw := "{\"a\": \"x\u009by\x7fz\u202e\", \"b\": [1, \"\\u001b\"]}"
	var before, after any
	if err := json.Unmarshal([]byte(raw), &before); err != nil {
		t.Fatal(err)
	}
	esc := indentJSON(json.RawMessage(raw))
	if err := json.Unmarshal([]byte(esc), &after); err != nil {
		t.Fatalf("indentJSON gave invalid JSON %q: %v", esc, err)
	}
	if b1, b2 := must(json.Marshal(before)), must(json.Marshal(after)); string(b1) != string(b2) {
		t.Errorf("the value changed: %s, want %s", b2, b1)
	}
	assertSafe(t, "indentJSON", esc)
}

// hostile is text that would drive a terminal: escape sequences, a
// carriage return, a backspace, C1 and bidi controls, invalid UTF-8.
const hostile = "\x1b[2J\x1b]0;pwned\x07\rover\bX\u009b31m\u202e\xff\xfe"

// assertSafe fails unless out is valid UTF-8 with no control character
// but newline and tab, and no bidi control.
func assertSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: invalid UTF-8 in %q", what, out)
	}
	for _, r := range out {
		if r != '\n' && r != '\t' && needsEscape(r, utf8.RuneLen(r), true) {
			t.Errorf("%s: %U reached the output: %q", what, r, out)
			return
		}
	}
}

// TestOutputEscaped runs the commands that print what runs, users and
// models wrote over data holding escape sequences, \r, \b and invalid
// UTF-8: their text output carries it escaped, their --json output is
// valid JSON.
func TestOutputEscaped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	hostileJSON := string(must(json.Marshal(hostile))) // \u001b…, \ufffd for the invalid bytes
	// Raw C1, DEL, bidi and invalid bytes are valid inside JSON strings.
	rawJSON := "\"\u009b2J \x7f \u202e \xff\""
	idea := writeFile(t, "hostile\x1b[31m.json", `{"schema":{"type":"object"},"context":[
		{"type":"tool","tool":{"echo":{"type":"object"}}},
		{"type":"text","text":`+hostileJSON+`},
		{"type":"plan","plan":[{"_tool":"echo","s":`+rawJSON+`,"t":`+hostileJSON+`,"_outputPath":"†state.echoed"}]}]}`)
	reg := agent.NewRegistry()
	reg.Activity("echo", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		return nil, &agentError{hostile}
	}))
	runID := "r\x1b[31m\r\b"
	code, out, errOut := acts(ctx, reg, "run", idea, "--input", `{"x":`+rawJSON+`}`, "--store", db, "--id", runID)
	if code != ExitCallsFailed {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	assertSafe(t, "run", out)
	assertSafe(t, "run's stderr", errOut)
	if !strings.Contains(out, `run r\x1b[31m\r\x08: done`) {
		t.Errorf("run: %q", out)
	}

	code, out, _ = acts(ctx, reg, "log", runID, "--store", db)
	assertSafe(t, "log", out)
	for _, want := range []string{
		`run r\x1b[31m\r\x08  plan  done  idea ` + filepath.Join(filepath.Dir(idea), `hostile\x1b[31m.json`),
		// A one-line text has its white space, \r included, collapsed.
		`user: \x1b[2J\x1b]0;pwned\x07 over\x08X\u009b31m\u202e`,
		`input {"x":"\u009b2J \x7f \u202e \xff"}`,
		`call 0 failed: runtime error in echo: \x1b[2J\x1b]0;pwned\x07\rover\x08X\u009b31m\u202e`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Errorf("log: exit %d", code)
	}
	_, out, _ = acts(ctx, reg, "log", runID, "--store", db, "--json")
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("log --json: invalid line %q", l)
		}
	}

	_, out, _ = acts(ctx, reg, "runs", "--store", db)
	assertSafe(t, "runs", out)
	if !strings.Contains(out, `r\x1b[31m\r\x08  plan`) {
		t.Errorf("runs:\n%s", out)
	}
	_, out, _ = acts(ctx, reg, "fork", runID, "--at", "1", "--id", "f\x1b]8;;", "--store", db)
	assertSafe(t, "fork", out)

	ctxFile := writeFile(t, "ctx.json", `[{"type":"state","s":`+rawJSON+`,"t":`+hostileJSON+`}]`)
	code, out, errOut = acts(ctx, reg, "resolve", ctxFile, "†state")
	assertSafe(t, "resolve", out)
	if code != 0 || !json.Valid([]byte(out)) || !strings.Contains(out, `"s": "\u009b2J \u007f \u202e �"`) {
		t.Errorf("resolve: %d %q %q", code, out, errOut)
	}
	_, _, errOut = acts(ctx, reg, "resolve", ctxFile, "†state.\x1b[2J")
	assertSafe(t, "resolve's error", errOut)

	// A model's answer and errors.
	srv := openaitest.Server(t, func([]byte) string {
		return `{"calls":[{"_tool":"lookup","q":` + rawJSON + `}],"output":{"capital":` + hostileJSON + `}}`
	})
	ideaFile := writeIdea(t)
	for _, args := range [][]string{{}, {"--stream"}} {
		code, out, errOut = acts(ctx, reg, append([]string{"request", ideaFile, "--model", "local:m", "--base-url", srv.URL}, args...)...)
		if code != 0 {
			t.Fatalf("request %q: exit %d: %s", args, code, errOut)
		}
		assertSafe(t, "request", out)
		assertSafe(t, "request's stderr", errOut)
		// The server sent the invalid byte as U+FFFD, as JSON encoders do.
		if !strings.Contains(out, `"q": "\u009b2J \u007f \u202e �"`) {
			t.Errorf("request %q:\n%s", args, out)
		}
	}
	_, out, _ = acts(ctx, reg, "request", ideaFile, "--model", "local:m", "--base-url", srv.URL, "--json")
	if !json.Valid([]byte(out)) {
		t.Errorf("request --json: %q", out)
	}
}

// TestThinkingEscaped streams a model's visible thinking, holding escape
// sequences, to standard error: escaped, its newlines kept.
func TestThinkingEscaped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta string) {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
		}
		chunk(`{"reasoning_content":"first\n\u001b[2J\r\b\u009b"}`)
		chunk(`{"content":"{\"calls\":[],\"output\":{\"capital\":\"Paris\"}}"}`)
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":%s}\n\n", openaitest.Usage)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	code, _, errOut := acts(context.Background(), nil, "request", writeIdea(t), "--model", "local:m", "--base-url", srv.URL, "--stream")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	assertSafe(t, "thinking", errOut)
	if !strings.Contains(errOut, "first\n\\x1b[2J\\r\\x08\\u009b") {
		t.Errorf("stderr %q", errOut)
	}
}

// agentError is an error whose text is data.
type agentError struct{ s string }

func (e *agentError) Error() string { return e.s }
