package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/augceo/agent/store"
)

// Store is a [store.Store] and [store.Catalog] in one SQLite database
// file. It is safe for concurrent use: writes go through one connection,
// one transaction at a time, and reads through a pool of read-only
// connections that WAL mode lets run alongside the writer. Other
// processes may open the same file; their writes wait up to
// [BusyTimeout] for the lock.
type Store struct {
	write *sql.DB // one connection: SQLite has one writer at a time
	read  *sql.DB

	// Statements prepared on write, used by every Append.
	head   *sql.Stmt
	insert *sql.Stmt
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Catalog = (*Store)(nil)
)

// BusyTimeout is how long a connection waits for a lock another process
// holds before it fails with SQLITE_BUSY.
const BusyTimeout = 10 * time.Second

// schemaVersion is the user_version of a database this package created.
const schemaVersion = 1

const schema = `
CREATE TABLE IF NOT EXISTS runs (
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
CREATE INDEX IF NOT EXISTS runs_created ON runs (created DESC, id);
CREATE TABLE IF NOT EXISTS entries (
	run  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	seq  INTEGER NOT NULL,
	type TEXT NOT NULL,
	call TEXT NOT NULL,
	data BLOB,
	time TEXT NOT NULL,
	PRIMARY KEY (run, seq)
) WITHOUT ROWID;
`

// Open opens the SQLite database at path, creating the file and its
// tables if they do not exist. path is a file name: ":memory:", an empty
// path and names with '?' are refused, since each connection would see a
// database of its own. ctx bounds the opening only.
//
// The database is in WAL mode with synchronous=NORMAL: a transaction
// that committed survives the process being killed, though not
// necessarily a power cut or an operating system crash.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.Contains(path, "?") {
		return nil, fmt.Errorf("sqlite: open %q: want the name of a database file", path)
	}
	common := fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", BusyTimeout.Milliseconds())
	write, err := sql.Open("sqlite", path+common+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	s := &Store{write: write}
	if err := s.init(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// Opened after init, so that the file is in WAL mode already.
	s.read, err = sql.Open("sqlite", path+common+"&_pragma=query_only(1)")
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	s.read.SetMaxIdleConns(4)
	return s, nil
}

// init creates the tables and prepares the statements of Append.
func (s *Store) init(ctx context.Context) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if version > schemaVersion {
		return fmt.Errorf("database schema version %d is newer than this program's %d", version, schemaVersion)
	}
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.head, err = s.write.PrepareContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1), COALESCE((SELECT MAX(seq) FROM entries WHERE run = ?1), 0)`)
	if err != nil {
		return err
	}
	s.insert, err = s.write.PrepareContext(ctx, `INSERT INTO entries (run, seq, type, call, data, time) VALUES (?, ?, ?, ?, ?, ?)`)
	return err
}

// Close closes the database. Calls after Close fail.
func (s *Store) Close() error {
	var errs []error
	for _, stmt := range []*sql.Stmt{s.head, s.insert} {
		if stmt != nil {
			errs = append(errs, stmt.Close())
		}
	}
	for _, db := range []*sql.DB{s.read, s.write} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// Save creates the run or replaces its metadata, keeping its journal.
func (s *Store) Save(ctx context.Context, run store.Run) error {
	created, err := formatTime(run.Created)
	if err != nil {
		return fmt.Errorf("save run %s: created: %w", run.ID, err)
	}
	updated, err := formatTime(run.Updated)
	if err != nil {
		return fmt.Errorf("save run %s: updated: %w", run.ID, err)
	}
	usage, err := json.Marshal(run.Usage)
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	_, err = s.write.ExecContext(ctx, `
INSERT INTO runs (id, kind, idea, model, status, error, usage, parent, forked_at, spec, created, updated)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
	kind = excluded.kind, idea = excluded.idea, model = excluded.model,
	status = excluded.status, error = excluded.error, usage = excluded.usage,
	parent = excluded.parent, forked_at = excluded.forked_at, spec = excluded.spec,
	created = excluded.created, updated = excluded.updated`,
		run.ID, run.Kind, run.Idea, run.Model, string(run.Status), run.Error, string(usage),
		run.Parent, run.ForkedAt, nullBytes(run.Spec), created, updated)
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	return nil
}

// Append adds entries to the end of a saved run's journal in one
// transaction, numbering them from the journal's last Seq plus one.
func (s *Store) Append(ctx context.Context, id string, entries ...store.Entry) error {
	times := make([]string, len(entries))
	for i, e := range entries {
		var err error
		if times[i], err = formatTime(e.Time); err != nil {
			return fmt.Errorf("append to run %s: entry %d: %w", id, i, err)
		}
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("append to run %s: %w", id, err)
	}
	defer tx.Rollback()
	var (
		exists bool
		last   int64
	)
	if err := tx.StmtContext(ctx, s.head).QueryRowContext(ctx, id).Scan(&exists, &last); err != nil {
		return fmt.Errorf("append to run %s: %w", id, err)
	}
	if !exists {
		return fmt.Errorf("append to run %s: %w", id, store.ErrNotFound)
	}
	if len(entries) == 0 {
		return nil
	}
	insert := tx.StmtContext(ctx, s.insert)
	for i, e := range entries {
		if _, err := insert.ExecContext(ctx, id, last+int64(i)+1, string(e.Type), e.Call, nullBytes(e.Data), times[i]); err != nil {
			return fmt.Errorf("append to run %s: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("append to run %s: %w", id, err)
	}
	return nil
}

// Entries walks a run's journal from the first entry whose Seq is greater
// than after, in one read transaction: it sees the entries committed
// before it started. Breaking out of the loop releases its connection.
func (s *Store) Entries(ctx context.Context, id string, after int64) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		n, err := s.entries(ctx, id, after, yield)
		if err != nil {
			yield(store.Entry{}, fmt.Errorf("entries of run %s: %w", id, err))
			return
		}
		if n > 0 {
			return
		}
		// No entries: a saved run with none after after, or no run.
		var exists bool
		if err := s.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?)`, id).Scan(&exists); err != nil {
			yield(store.Entry{}, fmt.Errorf("entries of run %s: %w", id, err))
		} else if !exists {
			yield(store.Entry{}, fmt.Errorf("entries of run %s: %w", id, store.ErrNotFound))
		}
	}
}

// entries yields the entries of run id after after and returns how many
// it yielded, or -1 if yield returned false.
func (s *Store) entries(ctx context.Context, id string, after int64, yield func(store.Entry, error) bool) (int, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT seq, type, call, data, time FROM entries WHERE run = ? AND seq > ? ORDER BY seq`, id, after)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		var (
			e         store.Entry
			typ, tm   string
			data      []byte
			parseTime error
		)
		if err := rows.Scan(&e.Seq, &typ, &e.Call, &data, &tm); err != nil {
			return n, err
		}
		e.Type, e.Data = store.EntryType(typ), data
		if e.Time, parseTime = parseTimeText(tm); parseTime != nil {
			return n, fmt.Errorf("entry %d: %w", e.Seq, parseTime)
		}
		if !yield(e, nil) {
			return -1, nil
		}
		n++
	}
	return n, rows.Err()
}

// Load returns a run's metadata, or ErrNotFound.
func (s *Store) Load(ctx context.Context, id string) (store.Run, error) {
	run, err := scanRun(s.read.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("load run %s: %w", id, err)
	}
	return run, nil
}

// Runs walks every run, most recently created first, then by id.
func (s *Store) Runs(ctx context.Context) iter.Seq2[store.Run, error] {
	return func(yield func(store.Run, error) bool) {
		rows, err := s.read.QueryContext(ctx, `SELECT `+runColumns+` FROM runs ORDER BY created DESC, id`)
		if err != nil {
			yield(store.Run{}, fmt.Errorf("runs: %w", err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			if err := ctx.Err(); err != nil {
				yield(store.Run{}, fmt.Errorf("runs: %w", err))
				return
			}
			run, err := scanRun(rows)
			if err != nil {
				yield(store.Run{}, fmt.Errorf("runs: %w", err))
				return
			}
			if !yield(run, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(store.Run{}, fmt.Errorf("runs: %w", err))
		}
	}
}

const runColumns = `id, kind, idea, model, status, error, usage, parent, forked_at, spec, created, updated`

func scanRun(row interface{ Scan(...any) error }) (store.Run, error) {
	var (
		run                             store.Run
		status, usage, created, updated string
		spec                            []byte
	)
	err := row.Scan(&run.ID, &run.Kind, &run.Idea, &run.Model, &status, &run.Error, &usage,
		&run.Parent, &run.ForkedAt, &spec, &created, &updated)
	if err != nil {
		return store.Run{}, err
	}
	run.Status, run.Spec = store.Status(status), spec
	if err := json.Unmarshal([]byte(usage), &run.Usage); err != nil {
		return store.Run{}, fmt.Errorf("run %s: usage: %w", run.ID, err)
	}
	if run.Created, err = parseTimeText(created); err != nil {
		return store.Run{}, fmt.Errorf("run %s: created: %w", run.ID, err)
	}
	if run.Updated, err = parseTimeText(updated); err != nil {
		return store.Run{}, fmt.Errorf("run %s: updated: %w", run.ID, err)
	}
	return run, nil
}

// timeLayout is RFC 3339 in UTC with all nine fractional digits, so that
// the text has a fixed width and sorts as the times do.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) (string, error) {
	t = t.UTC()
	if t.Year() < 0 || t.Year() > 9999 {
		return "", fmt.Errorf("time %v is outside years 0 to 9999", t)
	}
	return t.Format(timeLayout), nil
}

func parseTimeText(s string) (time.Time, error) {
	return time.Parse(timeLayout, s)
}

// nullBytes returns b, or nil (NULL) for a nil b.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
