package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/augceo/agent/internal/strict"
)

// The README shows this program: its code block must be main.go, byte
// for byte.
func TestREADME(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := "```go\n" + string(src) + "```\n"
	if !strings.Contains(string(readme), block) {
		t.Errorf("README.md has no code block equal to examples/quickstart/main.go; paste it between ```go and ```")
	}
}

// run against a fake OpenAI that speaks the real chat-completions wire
// format, streams its answers and rejects what OpenAI's strict structured
// outputs reject: step 1 calls the tool, step 2 answers with what the
// tool returned.
func TestRun(t *testing.T) {
	srv := strict.NewOpenAI(t, func(req *strict.Request, _ int) (string, error) {
		if strings.Contains(req.Text(), "light rain") { // the tool's result is in the context
			return `{"calls":[],"output":{"wear":"A raincoat over a warm sweater."}}`, nil
		}
		return `{"calls":[{"_reasoningForCall":"I need the weather.","_tool":"weather","City":"Paris","_outputPath":"†state.weather"}],"output":null}`, nil
	})
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	t.Setenv("OPENAI_API_KEY", "test")
	t.Setenv("OPENAI_MODEL", "")

	out := runMain(t)
	want := `weather({"City":"Paris"})
{"wear":"A raincoat over a warm sweater."}
wear: A raincoat over a warm sweater.
`
	if got := out; got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if !r.Stream || !r.Strict || !strings.Contains(string(r.Body), `"model":"gpt-5-mini"`) {
			t.Errorf("request %d: stream %v, strict %v, body %s", i+1, r.Stream, r.Strict, r.Body)
		}
	}
	if !strings.Contains(reqs[1].Text(), "12°C and light rain in Paris") {
		t.Errorf("step 2 does not show the tool's result:\n%s", reqs[1].Text())
	}
	if errs := srv.Rejected(); len(errs) > 0 {
		t.Errorf("schemas OpenAI would reject: %v", errs)
	}
}

// TestMain runs the program itself when the test binary is started by
// runMain: each run is a process of its own, as with go run, with its own
// default registry and its errors ending it through log.Fatal.
func TestMain(m *testing.M) {
	if os.Getenv("QUICKSTART_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runMain runs main in a new process of the test binary, with the
// environment of the test, and returns its standard output.
func runMain(t *testing.T) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QUICKSTART_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the program failed: %v\n%s", err, stderr.String())
	}
	return string(out)
}
