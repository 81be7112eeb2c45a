package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/augceo/agent/internal/pgtest"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/postgres"
	"github.com/augceo/agent/store/storetest"
)

// open opens a Store on the database at url.
func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	pgtest.URL(t) // skip or fail once, not in every subtest
	storetest.Run(t, func(t *testing.T) (store.Store, store.Catalog) {
		s := open(t, pgtest.Schema(t))
		return s, s
	})
}

// TestProcesses races processes, this test binary run again, on one
// database.
func TestProcesses(t *testing.T) {
	storetest.RunProcesses(t, func(t *testing.T) string {
		return pgtest.Schema(t)
	}, func(t *testing.T, url string) (store.Store, store.Catalog) {
		s := open(t, url)
		return s, s
	})
}

// TestOpenConcurrently opens stores on one new schema at once, as
// processes starting together do: creating the tables must not fail.
func TestOpenConcurrently(t *testing.T) {
	url := pgtest.Schema(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), url)
			if err != nil {
				t.Errorf("Open: %v", err)
				return
			}
			defer s.Close()
			if err := s.Create(t.Context(), store.Run{ID: fmt.Sprint("r", i)}); err != nil {
				t.Errorf("Create: %v", err)
			}
		})
	}
	wg.Wait()
}

// schema1 makes the tables of schema version 1, before leases, when
// strings were text, and saves a run in them.
const schema1 = `
CREATE TABLE runs (
	id        text PRIMARY KEY,
	kind      text NOT NULL,
	idea      text NOT NULL,
	model     text NOT NULL,
	status    text NOT NULL,
	error     text NOT NULL,
	usage     jsonb NOT NULL,
	parent    text NOT NULL,
	forked_at bigint NOT NULL,
	spec      bytea,
	created   text COLLATE "C" NOT NULL,
	updated   text COLLATE "C" NOT NULL
);
CREATE INDEX runs_created ON runs (created DESC, id);
CREATE TABLE entries (
	run  text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	seq  bigint NOT NULL,
	type text NOT NULL,
	call text NOT NULL,
	data bytea,
	time text COLLATE "C" NOT NULL,
	PRIMARY KEY (run, seq)
);
INSERT INTO runs VALUES ('r-é', 'loop', 'idea.json', 'scripted:x', 'failed', 'an error: é', '{"input":1,"output":2}',
	'p', 3, '{"a": 1}', '2025-03-14T15:09:26.535897932Z', '2025-03-14T15:09:27.535897932Z');
INSERT INTO entries VALUES
	('r-é', 1, 'message', '', '{"text":"hi"}', '2025-03-14T15:09:26.535897932Z'),
	('r-é', 2, 'started', 'c1', '{"tool":"x"}', '2025-03-14T15:09:26.535897933Z');
`

// execSQL runs query on the database at url, as another program would.
func execSQL(t *testing.T, url, query string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), query); err != nil {
		t.Fatal(err)
	}
}

// TestMigrate opens tables of schema version 1: its runs are there, held
// by no one, and take strings of any bytes.
func TestMigrate(t *testing.T) {
	url := pgtest.Schema(t)
	execSQL(t, url, schema1)
	s := open(t, url)
	t0 := time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)
	want := store.Run{
		ID: "r-é", Kind: "loop", Idea: "idea.json", Model: "scripted:x", Status: store.Failed, Error: "an error: é",
		Usage: provider.Usage{Input: 1, Output: 2}, Parent: "p", ForkedAt: 3, Spec: json.RawMessage(`{"a": 1}`),
		Created: t0, Updated: t0.Add(time.Second),
	}
	got, err := s.Load(t.Context(), want.ID)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Load of a run of version 1 mismatch (-got +want):\n%s", diff)
	}
	lease := store.Lease{Owner: "host\x00\xff", Expires: t0.Add(time.Minute)}
	if err := s.Acquire(t.Context(), want.ID, lease, t0); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	more := store.Entry{Type: store.EntrySettled, Call: "c1\x00", Data: json.RawMessage(`{}`), Time: t0}
	if err := s.Append(t.Context(), want.ID, store.Lease{Owner: lease.Owner}, more); err != nil {
		t.Fatalf("Append: %v", err)
	}
	var es []store.Entry
	for e, err := range s.Entries(t.Context(), want.ID, 0) {
		if err != nil {
			t.Fatalf("Entries: %v", err)
		}
		es = append(es, e)
	}
	wantEntries := []store.Entry{
		{Seq: 1, Type: store.EntryMessage, Data: json.RawMessage(`{"text":"hi"}`), Time: t0},
		{Seq: 2, Type: store.EntryStarted, Call: "c1", Data: json.RawMessage(`{"tool":"x"}`), Time: t0.Add(time.Nanosecond)},
		{Seq: 3, Type: store.EntrySettled, Call: "c1\x00", Data: json.RawMessage(`{}`), Time: t0},
	}
	if diff := cmp.Diff(es, wantEntries, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Entries mismatch (-got +want):\n%s", diff)
	}
	// Opening again finds version 4.
	open(t, url)
}

// TestMigrate2 opens tables of schema version 2, which had no runs.seq:
// the Appends that follow number on from each run's journal.
func TestMigrate2(t *testing.T) {
	url := pgtest.Schema(t)
	s := open(t, url)
	t0 := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	e := store.Entry{Type: store.EntryMessage, Data: json.RawMessage(`{}`), Time: t0}
	for _, id := range []string{"a", "b", "empty"} {
		if err := s.Create(t.Context(), store.Run{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "a", "a", "b"} {
		if err := s.Append(t.Context(), id, store.Lease{Owner: ""}, e); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	execSQL(t, url, `ALTER TABLE runs DROP COLUMN seq, DROP COLUMN last_write; UPDATE store_version SET version = 2`)
	s = open(t, url)
	for id, want := range map[string]int64{"a": 4, "b": 2, "empty": 1} {
		if err := s.Append(t.Context(), id, store.Lease{Owner: ""}, e); err != nil {
			t.Fatal(err)
		}
		var last int64
		for e, err := range s.Entries(t.Context(), id, 0) {
			if err != nil {
				t.Fatal(err)
			}
			last = e.Seq
		}
		if last != want {
			t.Errorf("run %s: the new entry is %d, want %d", id, last, want)
		}
	}
}

// TestOpenNewer refuses tables of a schema this package does not know.
func TestOpenNewer(t *testing.T) {
	url := pgtest.Schema(t)
	open(t, url).Close()
	execSQL(t, url, `UPDATE store_version SET version = 99`)
	s, err := postgres.Open(t.Context(), url)
	if err == nil {
		s.Close()
		t.Fatal("Open of tables of schema version 99 succeeded")
	}
	if want := "database schema version 99 is newer than this program's 4"; !strings.Contains(err.Error(), want) {
		t.Errorf("Open error = %v, want it to say %q", err, want)
	}
}

// TestAppendAfterVersion2Writer: a process of schema version 2, open
// when another migrated the tables, appends without moving runs.seq on
// (its statement is below); Appends of this version number on from the
// journal all the same.
func TestAppendAfterVersion2Writer(t *testing.T) {
	url := pgtest.Schema(t)
	s := open(t, url)
	e := store.Entry{Type: store.EntryMessage, Data: json.RawMessage(`{}`), Time: time.Unix(0, 0)}
	if err := s.Create(t.Context(), store.Run{ID: "r"}, e); err != nil {
		t.Fatal(err)
	}
	execSQL(t, url, `INSERT INTO entries (run, seq, type, call, data, time)
SELECT 'r', (SELECT COALESCE(max(seq), 0) FROM entries WHERE run = 'r') + x.n, x.type, x.call, x.data, x.time
FROM unnest('{message}'::bytea[], '{""}'::bytea[], '{"{}"}'::bytea[], '{1970-01-01T00:00:00.000000000Z}'::text[])
	WITH ORDINALITY AS x(type, call, data, time, n)`)
	for range 2 {
		if err := s.Append(t.Context(), "r", store.Lease{Owner: ""}, e); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []int64
	for e, err := range s.Entries(t.Context(), "r", 0) {
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Seq)
	}
	if !slices.Equal(seqs, []int64{1, 2, 3, 4}) {
		t.Errorf("seqs %v, want 1 to 4", seqs)
	}
}

// TestAcquireAnyNow: Acquire takes a now outside the years a lease's
// expiry is kept in, as the memory store does, and decides alike.
func TestAcquireAnyNow(t *testing.T) {
	s := open(t, pgtest.Schema(t))
	m := store.NewMemory()
	ctx := t.Context()
	expires := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, st := range []store.Store{s, m} {
		for _, id := range []string{"late", "early"} {
			if err := st.Create(ctx, store.Run{ID: id, Lease: store.Lease{Owner: "a", Expires: expires}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	early := time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, st := range []store.Store{s, m} {
		if err := st.Acquire(ctx, "late", store.Lease{Owner: "b", Expires: expires}, late); err != nil {
			t.Errorf("%T: Acquire after the lease expired, in year 10000: %v", st, err)
		}
		var le *store.LeaseError
		if err := st.Acquire(ctx, "early", store.Lease{Owner: "b", Expires: expires}, early); !errors.As(err, &le) {
			t.Errorf("%T: Acquire of a held lease in year -1: %v, want a *LeaseError", st, err)
		}
	}
}
