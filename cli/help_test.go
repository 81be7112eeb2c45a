package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestHelpCoversEveryFlag walks every command's flags: each must appear
// in the command's help, with its default, and on the command's synopsis
// lines in README.md's "## The CLI" section, so that neither can drift.
func TestHelpCoversEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "## The CLI\n")
	if start < 0 {
		t.Fatal(`README.md has no "## The CLI" section`)
	}
	section = section[start+len("## The CLI\n"):]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := acts(context.Background(), nil, c.name, "--help")
			if code != 0 || errOut != "" {
				t.Fatalf("acts %s --help: exit %d, stderr %q", c.name, code, errOut)
			}
			// The README's synopsis lines of this command.
			var synopsis []string
			for _, l := range strings.Split(section, "\n") {
				if strings.HasPrefix(l, "acts "+c.name+" ") {
					synopsis = append(synopsis, l)
				}
			}
			if len(synopsis) == 0 {
				t.Errorf("README.md's CLI section has no line starting %q", "acts "+c.name+" ")
			}
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			c.setup(fs)
			n := 0
			fs.VisitAll(func(f *flag.Flag) {
				n++
				name := regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `([^a-z0-9-]|$)`)
				if !name.MatchString(out) {
					t.Errorf("--%s is not in the help of %s:\n%s", f.Name, c.name, out)
				}
				if !zeroDefault(f) && !strings.Contains(strings.Join(strings.Fields(out), " "), "(default "+defaultText(f)+")") {
					t.Errorf("the default of --%s, %s, is not in the help of %s:\n%s", f.Name, f.DefValue, c.name, out)
				}
				if !name.MatchString(strings.Join(synopsis, "\n")) {
					t.Errorf("--%s is not on README.md's synopsis of %s: %q", f.Name, c.name, synopsis)
				}
				if !name.MatchString(section) {
					t.Errorf("--%s is not in README.md's CLI section", f.Name)
				}
			})
			if n == 0 && c.name != "plan" {
				t.Errorf("%s has no flags", c.name)
			}
			for _, want := range append(c.synopsis, strings.Fields(c.doc)[0]) {
				if !strings.Contains(out, want) {
					t.Errorf("the help of %s lacks %q:\n%s", c.name, want, out)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	ctx := context.Background()
	_, runHelp, _ := acts(ctx, nil, "run", "--help")
	if !strings.HasPrefix(runHelp, "Usage:\n  acts run IDEA.json") || !strings.Contains(runHelp, "Runs an Idea") || !strings.Contains(runHelp, "  --lease DURATION\n") {
		t.Errorf("acts run --help:\n%s", runHelp)
	}
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a prefix; "=run" is run's help, all of it
		stderr string // a prefix
	}{
		{"global --help", []string{"--help"}, 0, "Usage: acts COMMAND", ""},
		{"global -h", []string{"-h"}, 0, "Usage: acts COMMAND", ""},
		{"help", []string{"help"}, 0, "Usage: acts COMMAND", ""},
		{"no command", nil, 2, "", "Usage: acts COMMAND"},
		{"run --help", []string{"run", "--help"}, 0, "=run", ""},
		{"run -h", []string{"run", "-h"}, 0, "=run", ""},
		{"run -help", []string{"run", "-help"}, 0, "=run", ""},
		{"help run", []string{"help", "run"}, 0, "=run", ""},
		{"help after arguments", []string{"run", "idea.json", "--store", "memory:", "--help"}, 0, "=run", ""},
		{"help of an unknown command", []string{"help", "frobnicate"}, 2, "", "acts: usage: unknown command \"frobnicate\"\nUsage: acts COMMAND"},
		{"unknown flag", []string{"run", "--fast", "idea.json"}, 2, "", "acts: usage: flag provided but not defined: -fast\nUsage:\n  acts run IDEA.json"},
		{"bad flag value", []string{"log", "r", "--json=maybe"}, 2, "", "acts: usage: invalid boolean value \"maybe\" for -json"},
		{"bad progress", []string{"resume", "r", "--progress", "sometimes"}, 2, "", "acts: usage: --progress must be auto, always or never, got \"sometimes\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := acts(ctx, nil, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if tt.stdout == "=run" {
				if out != runHelp {
					t.Errorf("stdout:\n%s\nwant run's help:\n%s", out, runHelp)
				}
			} else if !strings.HasPrefix(out, tt.stdout) || tt.stdout == "" && out != "" {
				t.Errorf("stdout %q, want prefix %q", out, tt.stdout)
			}
			if !strings.HasPrefix(errOut, tt.stderr) || tt.stderr == "" && errOut != "" {
				t.Errorf("stderr %q, want prefix %q", errOut, tt.stderr)
			}
		})
	}
	// The global usage names every command.
	_, out, _ := acts(ctx, nil, "--help")
	for _, c := range commands {
		if !strings.Contains(out, "\n  "+c.name+" ") {
			t.Errorf("the usage lacks %s:\n%s", c.name, out)
		}
	}
	// A usage error shows the command's flags, not its whole help.
	_, _, errOut := acts(ctx, nil, "log", "--nope")
	if !strings.Contains(errOut, "  --prices FILE\n") || strings.Contains(errOut, "Prints a run's trace") || !strings.HasSuffix(errOut, "Run \"acts log --help\" for more.\n") {
		t.Errorf("usage error:\n%s", errOut)
	}
}

func TestWrap(t *testing.T) {
	for _, tt := range []struct {
		text  string
		width int
		want  []string
	}{
		{"", 10, []string{""}},
		{"a b c", 3, []string{"a b", "c"}},
		{"averyverylongword b", 5, []string{"averyverylongword", "b"}},
		{"  spaces   collapse ", 20, []string{"spaces collapse"}},
	} {
		var got bytes.Buffer
		for _, l := range wrap(tt.text, tt.width) {
			got.WriteString(l + "|")
		}
		if want := strings.Join(tt.want, "|") + "|"; got.String() != want {
			t.Errorf("wrap(%q, %d) = %q, want %q", tt.text, tt.width, got.String(), want)
		}
	}
}
