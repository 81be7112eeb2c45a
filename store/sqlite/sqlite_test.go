package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/sqlite"
	"github.com/augceo/agent/store/storetest"
)

func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, store.Catalog) {
		s := open(t, filepath.Join(t.TempDir(), "runs.db"))
		return s, s
	})
}

// TestProcesses races processes, this test binary run again, on one
// database file.
func TestProcesses(t *testing.T) {
	storetest.RunProcesses(t, func(t *testing.T) string {
		return filepath.Join(t.TempDir(), "runs.db")
	}, func(t *testing.T, path string) (store.Store, store.Catalog) {
		s := open(t, path)
		return s, s
	})
}

var (
	t0  = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)
	run = store.Run{
		ID: "r", Kind: "loop", Idea: "idea.json", Model: "scripted:x", Status: store.Running,
		Usage: provider.Usage{Input: 1, Output: 2, Thinking: 3, CacheRead: 4, CacheWrite: 5},
		Spec:  json.RawMessage(`{"a": 1}`), Created: t0, Updated: t0,
		Lease: store.Lease{Owner: "host/1", Expires: t0.Add(time.Minute)},
	}
	journal = []store.Entry{
		{Seq: 1, Type: store.EntryMessage, Data: json.RawMessage(`{"text":"hi"}`), Time: t0},
		{Seq: 2, Type: store.EntryStarted, Call: "c1", Data: json.RawMessage(`{"tool":"x"}`), Time: t0.Add(time.Nanosecond)},
		{Seq: 3, Type: store.EntrySettled, Call: "c1", Data: json.RawMessage(`{}`), Time: t0.Add(time.Second)},
	}
)

// check fails t unless the database at path holds run and journal.
func check(t *testing.T, path string) {
	t.Helper()
	s := open(t, path)
	got, err := s.Load(t.Context(), run.ID)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if diff := cmp.Diff(got, run); diff != "" {
		t.Errorf("Load mismatch (-got +want):\n%s", diff)
	}
	var es []store.Entry
	for e, err := range s.Entries(t.Context(), run.ID, 0) {
		if err != nil {
			t.Fatalf("Entries: %v", err)
		}
		es = append(es, e)
	}
	if diff := cmp.Diff(es, journal, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Entries mismatch (-got +want):\n%s", diff)
	}
}

func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Create(t.Context(), run, journal[:1]...); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := s.Append(t.Context(), run.ID, store.Lease{Owner: run.Lease.Owner}, journal[1:]...); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	check(t, path)
}

// TestKilled checks the promise of Append: entries appended before the
// process is killed (SIGKILL, no Close) are there when the file is opened
// again. The test runs itself as the process to kill.
func TestKilled(t *testing.T) {
	const env = "STORE_SQLITE_TEST_KILLED"
	if path := os.Getenv(env); path != "" {
		s, err := sqlite.Open(t.Context(), path)
		if err == nil {
			err = s.Create(t.Context(), run, journal[:1]...)
		}
		if err == nil {
			err = s.Append(t.Context(), run.ID, store.Lease{Owner: run.Lease.Owner}, journal[1:]...)
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("appended")
		select {} // wait to be killed
	}

	path := filepath.Join(t.TempDir(), "runs.db")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestKilled$")
	cmd.Env = append(os.Environ(), env+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "appended" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v; want appended", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	check(t, path)
}

// schema1 is the schema of version 1, before leases.
const schema1 = `
CREATE TABLE runs (
	id        TEXT PRIMARY KEY,
	kind      TEXT NOT NULL,
	idea      TEXT NOT NULL,
	model     TEXT NOT NULL,
	status    TEXT NOT NULL,
	error     TEXT NOT NULL,
	usage     TEXT NOT NULL,
	parent    TEXT NOT NULL,
	forked_at INTEGER NOT NULL,
	spec      BLOB,
	created   TEXT NOT NULL,
	updated   TEXT NOT NULL
);
CREATE INDEX runs_created ON runs (created DESC, id);
CREATE TABLE entries (
	run  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	seq  INTEGER NOT NULL,
	type TEXT NOT NULL,
	call TEXT NOT NULL,
	data BLOB,
	time TEXT NOT NULL,
	PRIMARY KEY (run, seq)
) WITHOUT ROWID;
PRAGMA user_version = 1;
INSERT INTO runs VALUES ('r', 'loop', 'idea.json', 'scripted:x', 'running', '', '{"input":1,"output":2,"thinking":3,"cacheRead":4,"cacheWrite":5}',
	'', 0, '{"a": 1}', '2025-03-14T15:09:26.535897932Z', '2025-03-14T15:09:26.535897932Z');
INSERT INTO entries VALUES
	('r', 1, 'message', '', '{"text":"hi"}', '2025-03-14T15:09:26.535897932Z'),
	('r', 2, 'started', 'c1', '{"tool":"x"}', '2025-03-14T15:09:26.535897933Z'),
	('r', 3, 'settled', 'c1', '{}', '2025-03-14T15:09:27.535897932Z');
`

// execSQL runs query on the database file at path, as another program would.
func execSQL(t *testing.T, path, query string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), query); err != nil {
		t.Fatal(err)
	}
}

// TestMigrate opens a database of schema version 1: its runs are there,
// held by no one, and can be acquired.
func TestMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	execSQL(t, path, schema1)
	s := open(t, path)
	got, err := s.Load(t.Context(), run.ID)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got.Lease != (store.Lease{}) {
		t.Errorf("Lease of a run of version 1 = %+v, want none", got.Lease)
	}
	if err := s.Acquire(t.Context(), run.ID, run.Lease, t0); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	check(t, path)
}

// TestOpenNewer refuses a database of a schema this package does not know.
func TestOpenNewer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	execSQL(t, path, "PRAGMA user_version = 99")
	s, err := sqlite.Open(t.Context(), path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a database of schema version 99 succeeded")
	}
	if want := "database schema version 99 is newer than this program's 2"; !strings.Contains(err.Error(), want) {
		t.Errorf("Open error = %v, want it to say %q", err, want)
	}
}

func TestOpenRefuses(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file:x.db", "x.db?mode=ro"} {
		if s, err := sqlite.Open(t.Context(), path); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", path)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	data, _ := json.Marshal(map[string]string{"role": "assistant", "text": strings.Repeat("lorem ipsum ", 24)})
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("%dx%dB", n, len(data)), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "runs.db"))
			if err := s.Create(b.Context(), run); err != nil {
				b.Fatal(err)
			}
			entries := make([]store.Entry, n)
			for i := range entries {
				entries[i] = store.Entry{Type: store.EntryMessage, Data: data, Time: t0}
			}
			for b.Loop() {
				if err := s.Append(b.Context(), run.ID, run.Lease, entries...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOpenWhileAnotherCreates opens a new database file while another
// process, creating it, holds its write lock before the file is in WAL
// mode (as Open does while it switches the file to WAL): Open waits for
// the lock rather than fail with SQLITE_BUSY, which SQLite returns for
// that switch without waiting the busy timeout.
func TestOpenWhileAnotherCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	time.AfterFunc(200*time.Millisecond, func() {
		_, err := db.ExecContext(context.Background(), "ROLLBACK")
		released <- err
	})
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open while another process held the write lock: %v", err)
	}
	defer s.Close()
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if err := s.Create(t.Context(), run, journal...); err != nil {
		t.Fatalf("Create: %v", err)
	}
	var mode string
	if err := db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q, %v; want wal", mode, err)
	}
}

// TestErrorsNameFile: an error of the database names its file, as two
// processes may use different files; one about the run does not.
func TestErrorsNameFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	s := open(t, path)
	if err := s.Create(t.Context(), run, journal[:1]...); err != nil {
		t.Fatal(err)
	}
	unknown, held := s.Append(t.Context(), "nope", store.Lease{Owner: ""}), s.Append(t.Context(), run.ID, store.Lease{Owner: "other"})
	// Another process holds the write lock longer than the write waits.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	locked := s.Append(ctx, run.ID, store.Lease{Owner: run.Lease.Owner}, journal[1:]...)
	if _, err := db.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	execSQL(t, path, `CREATE TRIGGER refuse BEFORE INSERT ON entries BEGIN SELECT RAISE(ABORT, 'the journal is closed'); END`)
	refused := s.Append(t.Context(), run.ID, store.Lease{Owner: run.Lease.Owner}, journal[1:]...)
	execSQL(t, path, `DROP TRIGGER refuse; ALTER TABLE entries RENAME TO gone`)
	var read error
	for _, err := range s.Entries(t.Context(), run.ID, 0) {
		read = err
	}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"write lock held", locked, "append to run r: " + path + ": context deadline exceeded"},
		{"write refused", refused, "append to run r: " + path + ": constraint failed: the journal is closed"},
		{"read failed", read, "entries of run r: " + path + ": SQL logic error: no such table: entries"},
		{"unknown run", unknown, "append to run nope: store: run not found"},
		{"run held", held, "store: run r is held by host/1"},
	} {
		if tt.err == nil || !strings.HasPrefix(tt.err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to begin %q", tt.name, tt.err, tt.want)
		}
	}
}
