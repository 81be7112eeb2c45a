package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/openai"
)

func TestResolve(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string
		stderr string
	}{
		{"value", []string{"resolve", "../testdata/refund.json", "†input.amount"}, "", 0, "50.0\n", ""},
		{"object", []string{"resolve", "../testdata/refund.json", "†state.billingHistory"}, "", 0, "{\n  \"lastChargeback\": \"2025-09-10\",\n  \"orders\": 5\n}\n", ""},
		{"fallback", []string{"resolve", "../testdata/refund.json", "†state.receipt || †state.error.code"}, "", 0, "\"card_declined\"\n", ""},
		{"instance flag after args", []string{"resolve", "../testdata/refund.json", "†input.customerId", "--instance", "②"}, "", 0, "\"cust_456\"\n", ""},
		{"instance falls back to global", []string{"resolve", "--instance", "②", "../testdata/refund.json", "†input.amount"}, "", 0, "50.0\n", ""},
		{"stdin", []string{"resolve", "-", "†state.x"}, `[{"type":"state","x":[1,2]}]`, 0, "[\n  1,\n  2\n]\n", ""},
		{"not found", []string{"resolve", "../testdata/refund.json", "†state.receipt"}, "", 1, "", "acts: ref \"†state.receipt\" at path \"receipt\": not found\n"},
		{"syntax", []string{"resolve", "-", "†state..x"}, `[]`, 1, "", "acts: ref \"†state..x\" at offset 9: syntax error: empty path segment\n"},
		{"bad context", []string{"resolve", "-", "†state.x"}, `[{"type":"state"},{"type":"data","kind":"a b"}]`, 1, "", "acts: -: message 1: field \"kind\": message: invalid: \"a b\" is not a valid kind (letters, digits, '_' and '-')\n"},
		{"missing file", []string{"resolve", "nope.json", "†state.x"}, "", 1, "", "acts: open nope.json: no such file or directory\n"},
		{"usage", []string{"resolve", "x.json"}, "", 2, "", "acts: usage: resolve takes CONTEXT.json and EXPR\n"},
		{"unknown command", []string{"frobnicate"}, "", 2, "", "acts: usage: unknown command \"frobnicate\"\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if stdout.String() != tt.stdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.stdout)
			}
			if !strings.HasPrefix(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q, want prefix %q", stderr.String(), tt.stderr)
			}
		})
	}
}

// run runs a command with the default registry.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Main(ctx, args, Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Providers: openaiProviders})
}

// openaiProviders is the Env.Providers of the tests, whose servers speak
// OpenAI's wire format: any name with a base URL is an OpenAI-compatible
// server, as with cli/providers.
func openaiProviders(_ context.Context, name, model, baseURL string) (provider.Provider, error) {
	if baseURL == "" {
		return nil, fmt.Errorf("%w %q", ErrUnknownProvider, name)
	}
	return openai.New(openai.Config{Name: name, Model: model, BaseURL: baseURL})
}

// execute parses a command's flags and runs it, as Main does, and returns
// its error.
func execute(ctx context.Context, c *command, env *Env, args []string) error {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	run := c.setup(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	return run(ctx, env, pos)
}

// TestResolveIdea: resolve reads an Idea's context, its presets
// expanded, with the inputs of --input as acts run adds them, so a
// reference is resolved as a call of the run would resolve it.
func TestResolveIdea(t *testing.T) {
	const orders, ordersInput = "../examples/orders/orders.json", "@../examples/orders/orders.jsonl"
	dir := t.TempDir()
	preset := filepath.Join(dir, "preset.json")
	if err := os.WriteFile(preset, []byte(`{"schema":{},"presets":{"rates":{"messages":[{"type":"data","kind":"config","data":{"rate":0.2}}]}},
		"context":[{"type":"preset","preset":"rates"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	declared := filepath.Join(dir, "declared.json")
	if err := os.WriteFile(declared, []byte(`{"schema":{},"context":[{"type":"input","schema":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"the Idea's data", []string{orders, "†config.shipping"}, 0, "4.9\n", ""},
		// As acts run takes them: inputs that fit the Idea's declaration.
		{"a declared input", []string{declared, "†input.x", "--input", `{"x":1}`}, 0, "1\n", ""},
		{"an input that does not fit", []string{declared, "†input.x", "--input", `{"x":"one"}`}, 1, "",
			"acts: --input: does not fit the input schema of " + declared + ": at /x: expected integer, got string"},
		{"an instance's input", []string{orders, "†input.country", "--input", ordersInput, "--instance", "order-0003"}, 0, "\"GB\"\n", ""},
		{"one input", []string{orders, "†input.country", "--input", `{"country":"FR"}`}, 0, "\"FR\"\n", ""},
		{"no such input", []string{orders, "†input.country"}, 1, "", "acts: ref \"†input.country\": not found: unknown kind \"input\"\n"},
		{"a preset", []string{preset, "†config.rate"}, 0, "0.2\n", ""},
		{"not an Idea", []string{"-", "†state.x"}, 1, "", "acts: -: agent: idea: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"resolve"}, tt.args...), strings.NewReader(`{"contxt":[]}`), &stdout, &stderr)
			if code != tt.code || stdout.String() != tt.stdout || !strings.HasPrefix(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tt.code, tt.stdout, tt.stderr)
			}
		})
	}
}

// TestResolveRegistryPreset: a preset message of a context file, an array
// of messages or an Idea, is expanded from the program's registry, as
// acts run and acts plan validate expand it.
func TestResolveRegistryPreset(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Preset("rates", agent.Preset{Messages: []message.Message{{Type: message.TypeData, Kind: "config", Data: json.RawMessage(`{"rate":0.2}`)}}})
	dir := t.TempDir()
	for name, data := range map[string]string{
		"array.json": `[{"type":"preset","preset":"rates"}]`,
		"idea.json":  `{"schema":{},"context":[{"type":"preset","preset":"rates"}]}`,
	} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := acts(t.Context(), reg, "resolve", file, "†config.rate"); code != 0 || out != "0.2\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0.2", name, code, out, errOut)
		}
	}
}
