package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/augceo/agent"
)

// TestStoreURL: a --store that names no store is an error that says so,
// and a command that reads runs creates no database where there was none.
func TestStoreURL(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "acts.bd")
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"runs of no file", []string{"runs", "--store", missing}, 1, "acts: store " + missing + " does not exist (--store, or ACTS_STORE, names a SQLite file)\n"},
		{"log of no file", []string{"log", "r", "--store", "sqlite:" + missing}, 1, "acts: store " + missing + " does not exist (--store, or ACTS_STORE, names a SQLite file)\n"},
		{"resume of no file", []string{"resume", "r", "--store", missing}, 1, "acts: store " + missing + " does not exist (--store, or ACTS_STORE, names a SQLite file)\n"},
		{"fork of no file", []string{"fork", "r", "--at", "0", "--store", missing}, 1, "acts: store " + missing + " does not exist (--store, or ACTS_STORE, names a SQLite file)\n"},
		{"another scheme", []string{"runs", "--store", "mysql://u@h/db"}, 2, `acts: usage: --store "mysql://u@h/db": unknown scheme "mysql": want a SQLite file, sqlite:PATH, memory: or a postgres:// URL` + "\n"},
		{"a misspelt scheme", []string{"log", "r", "--store", "postgress://u@h/db"}, 2, `acts: usage: --store "postgress://u@h/db": unknown scheme "postgress": want a SQLite file, sqlite:PATH, memory: or a postgres:// URL` + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := acts(context.Background(), agent.NewRegistry(), tt.args...)
			if code != tt.code || !strings.HasPrefix(errOut, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d, %q first", code, errOut, tt.code, tt.stderr)
			}
			if _, err := os.Stat(missing); err == nil {
				t.Fatalf("%s created %s", strings.Join(tt.args, " "), missing)
			}
		})
	}
}
