package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/augceo/agent"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/sqlite"
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
		// memory: holds the runs of the command that made them only.
		{"runs of memory", []string{"runs", "--store", "memory:"}, 2, "acts: usage: --store memory: keeps no run after the command that made it: name the store the run was made in\n"},
		{"resume of memory", []string{"resume", "r", "--store", "memory:"}, 2, "acts: usage: --store memory: keeps no run after the command that made it: name the store the run was made in\n"},
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

// TestLogCorrupt: an entry whose data was cut short (a truncated row) is
// an error naming the run and the entry, in the trace and in --json.
func TestLogCorrupt(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = st.Create(t.Context(), store.Run{ID: "c", Kind: "plan", Status: store.Interrupted, Created: now, Updated: now},
		store.Entry{Type: store.EntryMessage, Data: json.RawMessage(`{"type":"text","text":"hi"}`), Time: now},
		store.Entry{Type: store.EntryMessage, Data: json.RawMessage(`{"type":"text","te`), Time: now})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"log", "c", "--store", db}, {"log", "c", "--store", db, "--json"}} {
		code, _, errOut := acts(t.Context(), agent.NewRegistry(), args...)
		if want := "acts: run c: entry 2: "; code != 1 || !strings.HasPrefix(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want 1, %q…", strings.Join(args, " "), code, errOut, want)
		}
	}
}

// TestRunsCorrupt: runs lists every run it can read, those after one it
// cannot as well, then names that one and its file.
func TestRunsCorrupt(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, id := range []string{"oldest", "old", "new"} {
		at := now.Add(time.Duration(i) * time.Second)
		if err := st.Create(t.Context(), store.Run{ID: id, Kind: "plan", Status: store.Done, Created: at, Updated: at}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(`UPDATE runs SET usage = '{"input":' WHERE id = 'old'`)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := acts(t.Context(), agent.NewRegistry(), "runs", "--store", db)
	if code != 1 || !strings.Contains(out, "new") || !strings.Contains(out, "oldest") || errOut != "acts: runs: "+db+": run old: usage: unexpected end of JSON input\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestLogLongCacheWrites: log says how many of the tokens written to the
// cache were for an hour, and prices them at cacheWriteLong.
func TestLogLongCacheWrites(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = st.Create(t.Context(), store.Run{ID: "h", Kind: "loop", Model: "anthropic:claude-x", Status: store.Done, Created: now, Updated: now},
		store.Entry{Type: store.EntryUsage, Data: json.RawMessage(`{"input":1000000,"output":0,"cacheWrite":3000000,"cacheWriteLong":2000000}`), Time: now})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	prices := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(prices, []byte(`{"claude-*": {"input": 3, "cacheWrite": 3.75, "cacheWriteLong": 6, "output": 15}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, errOut := acts(t.Context(), agent.NewRegistry(), "log", "h", "--store", db, "--prices", prices)
	// 3 + 1 × 3.75 + 2 × 6 dollars.
	if want := "3000000 written to it, 2000000 of them to last an hour (hit rate 0%), 0 output tokens (0 thinking); cost $18.7500\n"; !strings.Contains(out, want) {
		t.Errorf("log:\n%s%s\nwant %q", out, errOut, want)
	}
}

// TestLogUsageLost: log says when the usage of some requests was lost,
// since its total is then short.
func TestLogUsageLost(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = st.Create(t.Context(), store.Run{ID: "l", Kind: "loop", Model: "openai:gpt-x", Status: store.Done, Created: now, Updated: now},
		store.Entry{Type: store.EntryUsage, Data: json.RawMessage(`{"input":100,"output":5}`), Time: now},
		store.Entry{Type: store.EntryUsage, Data: json.RawMessage(`{"input":0,"output":0,"lost":true}`), Time: now})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, out, errOut := acts(t.Context(), agent.NewRegistry(), "log", "l", "--store", db)
	if want := "5 output tokens (0 thinking); the usage of 1 request was lost (the provider did not say it: a stream cut after the answer, or a server that does not report usage), so these totals are short\n"; !strings.Contains(out, want) {
		t.Errorf("log:\n%s%s\nwant %q", out, errOut, want)
	}
}
