package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoProviders runs commands in a program that has no model providers
// (Env.Providers nil): plans run, and what needs a model says why it
// cannot.
func TestNoProviders(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "runs.db")
	noModels := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		reg, _ := batchEnv(false, nil)
		code := Main(ctx, args, Env{Registry: reg, Stdout: &stdout, Stderr: &stderr})
		return code, stdout.String(), stderr.String()
	}
	batchIdea := writeFile(t, "batch.json", batch)
	// ACTS_MODEL is for the acts command: a plan needs no model.
	t.Setenv("ACTS_MODEL", "openai:gpt-5-mini")
	if code, _, errOut := noModels("run", batchIdea, "--input", `[{"n":1}]`, "--store", db, "--id", "p"); code != 0 {
		t.Errorf("a plan with ACTS_MODEL set: exit %d: %s", code, errOut)
	}
	const why = "this program has no model providers for openai:gpt-5-mini: use the acts command (cmd/acts), or set cli.Env.Providers\n"
	loopIdea := writeIdea(t)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"request", []string{"request", loopIdea}, "acts: " + why},
		{"a loop", []string{"run", loopIdea, "--store", db}, "acts: " + loopIdea + " has no plan to run offline, and " + why},
		{"a plan given --model", []string{"run", batchIdea, "--store", db, "--model", "openai:gpt-5-mini"}, "acts: " + why},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := noModels(tt.args...)
			if code != 1 || errOut != tt.want {
				t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, tt.want)
			}
		})
	}
	t.Setenv("ACTS_MODEL", "")
	code, _, errOut := noModels("request", loopIdea)
	if code != 2 || !strings.Contains(errOut, "--model must be provider:model") {
		t.Errorf("request with no model: %d %q", code, errOut)
	}
	// A model named only by ACTS_MODEL is blamed on it, not on a flag
	// the user never gave.
	t.Setenv("ACTS_MODEL", "openai")
	code, _, errOut = noModels("request", loopIdea)
	if code != 2 || !strings.Contains(errOut, `ACTS_MODEL must be provider:model, got "openai"`) {
		t.Errorf("request with a bad ACTS_MODEL: %d %q", code, errOut)
	}
}

// TestNoSDKs keeps the provider SDKs out of package cli and of programs
// built on it without providers, such as examples/orders: cmd/acts wires
// them in through cli/providers.
func TestNoSDKs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{".", "../examples/orders"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, sdk := range []string{"github.com/openai/", "github.com/anthropics/", "google.golang.org/genai", "github.com/augceo/agent/provider/openai", "github.com/augceo/agent/provider/anthropic", "github.com/augceo/agent/provider/gemini"} {
				if strings.HasPrefix(dep, sdk) {
					t.Errorf("%s imports %s", pkg, dep)
				}
			}
		}
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tt := range []struct {
		name string
		w    io.Writer
	}{{"file", f}, {"pipe", w}, {"buffer", &bytes.Buffer{}}} {
		if isTerminal(tt.w) {
			t.Errorf("a %s is a terminal", tt.name)
		}
	}
}
