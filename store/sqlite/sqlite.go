package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	modernc "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/internal/columns"
)

// Store is a [store.Store] and [store.Catalog] in one SQLite database
// file. It is safe for concurrent use: writes go through one connection,
// one BEGIN IMMEDIATE transaction at a time, and reads through a pool of
// read-only connections that WAL mode lets run alongside the writer.
// Other processes may open the same file; their writes wait up to
// [BusyTimeout] for the lock.
type Store struct {
	path  string  // the database file, as Open was given it, for errors
	write *sql.DB // one connection: SQLite has one writer at a time
	read  *sql.DB

	// Statements prepared on write.
	lease  *sql.Stmt // the lease of a run
	head   *sql.Stmt // the lease of a run and the last Seq of its journal
	insert *sql.Stmt // an entry
	renew  *sql.Stmt // a run's lease expiry
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Catalog = (*Store)(nil)
)

// BusyTimeout is how long a connection waits for a lock another process
// holds before it fails with SQLITE_BUSY.
const BusyTimeout = 10 * time.Second

// migrations[v] takes a database from schema version v (its user_version)
// to v+1; a new database goes through all of them.
var migrations = []string{
	0: `
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
`,
	// Version 2 adds leases; no one holds the runs of version 1.
	1: `
ALTER TABLE runs ADD COLUMN lease_owner TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN lease_expires TEXT NOT NULL DEFAULT '0001-01-01T00:00:00.000000000Z';
`,
}

// schemaVersion is the user_version of a database this package made or
// migrated.
var schemaVersion = len(migrations)

// Open opens the SQLite database at path, creating the file and its
// tables if they do not exist, and migrating a database of an earlier
// schema version (see the package doc). path is a file name:
// ":memory:", an empty path and names with '?' are refused, since each
// connection would see a database of its own. ctx bounds the opening
// only.
//
// The database is in WAL mode with synchronous=NORMAL: a transaction
// that committed survives the process being killed, though not
// necessarily a power cut or an operating system crash.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.Contains(path, "?") {
		return nil, fmt.Errorf("sqlite: open %q: want the name of a database file", path)
	}
	common := fmt.Sprintf("?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", BusyTimeout.Milliseconds())
	write, err := sql.Open("sqlite", path+common+"&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	s := &Store{path: path, write: write}
	if err := s.init(ctx); err != nil {
		s.Close()
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

// init puts the database in WAL mode, creates or migrates the tables, in
// one transaction, and prepares the statements of the writes.
func (s *Store) init(ctx context.Context) error {
	if err := walMode(ctx, s.write); err != nil {
		return err
	}
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
	for v := version; v < schemaVersion; v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrate schema version %d to %d: %w", v, v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for _, p := range []struct {
		stmt  **sql.Stmt
		query string
	}{
		{&s.lease, `SELECT lease_owner, lease_expires FROM runs WHERE id = ?`},
		{&s.head, `SELECT lease_owner, lease_expires, COALESCE((SELECT MAX(seq) FROM entries WHERE run = ?1), 0) FROM runs WHERE id = ?1`},
		{&s.insert, `INSERT INTO entries (run, seq, type, call, data, time) VALUES (?, ?, ?, ?, ?, ?)`},
		{&s.renew, `UPDATE runs SET lease_expires = ? WHERE id = ?`},
	} {
		if *p.stmt, err = s.write.PrepareContext(ctx, p.query); err != nil {
			return err
		}
	}
	return nil
}

// walMode puts the database of db in WAL mode, which the file keeps. The
// switch of a file not yet in WAL mode fails with SQLITE_BUSY at once,
// without waiting for the busy timeout, while another connection holds
// the file's write lock, as another process opening a new file does
// while it makes the switch: so the switch is tried again every
// walRetry, until BusyTimeout.
func walMode(ctx context.Context, db *sql.DB) error {
	ctx, cancel := context.WithTimeout(ctx, BusyTimeout)
	defer cancel()
	for {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if e, ok := errors.AsType[*modernc.Error](err); !ok || e.Code()&0xff != sqlite3.SQLITE_BUSY {
			if err == nil && mode != "wal" {
				err = fmt.Errorf("journal mode is %s, not wal", mode)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("switch to WAL mode: %w", err)
		case <-time.After(walRetry):
		}
	}
}

// walRetry is how long walMode waits before it tries again.
const walRetry = 5 * time.Millisecond

// Close closes the database. Calls after Close fail.
func (s *Store) Close() error {
	var errs []error
	for _, stmt := range []*sql.Stmt{s.lease, s.head, s.insert, s.renew} {
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

// Create saves a new run and its first entries in one transaction, or
// returns ErrExists.
func (s *Store) Create(ctx context.Context, run store.Run, entries ...store.Entry) error {
	cols, err := runValues(run)
	if err != nil {
		return fmt.Errorf("create run %s: %w", run.ID, err)
	}
	times, err := entryTimes(entries)
	if err != nil {
		return fmt.Errorf("create run %s: %w", run.ID, err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, cols...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrExists
		}
		return s.insertEntries(ctx, tx, run.ID, 0, entries, times)
	})
	return s.wrap(err, "create", run.ID)
}

// Save replaces the metadata of a run for owner and appends entries to
// its journal, in one transaction that checks the run's lease.
func (s *Store) Save(ctx context.Context, owner string, run store.Run, entries ...store.Entry) error {
	cols, err := runValues(run)
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	times, err := entryTimes(entries)
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		heldExpires, last, err := s.readHead(ctx, tx, run.ID, owner)
		if err != nil {
			return err
		}
		if owner != "" && run.Lease.Owner == owner && heldExpires > cols[13].(string) {
			cols[13] = heldExpires // a holder keeping its lease never shortens it
		}
		_, err = tx.ExecContext(ctx, `
UPDATE runs SET kind = ?2, idea = ?3, model = ?4, status = ?5, error = ?6, usage = ?7, parent = ?8,
	forked_at = ?9, spec = ?10, created = ?11, updated = ?12, lease_owner = ?13, lease_expires = ?14
WHERE id = ?1`, cols...)
		if err != nil {
			return err
		}
		return s.insertEntries(ctx, tx, run.ID, last, entries, times)
	})
	return s.wrap(err, "save", run.ID)
}

// Acquire leases a run to lease.Owner, in one transaction; see
// [store.Store.Acquire].
func (s *Store) Acquire(ctx context.Context, id string, lease store.Lease, now time.Time) error {
	expires, err := columns.FormatTime(lease.Expires)
	if err != nil {
		return fmt.Errorf("acquire run %s: lease expiry: %w", id, err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		held, err := scanLease(tx.StmtContext(ctx, s.lease).QueryRowContext(ctx, id))
		if err != nil {
			return err
		}
		if err := held.Yield(id, lease.Owner, now); err != nil {
			return err
		}
		if held.Owner == lease.Owner && held.Expires.After(lease.Expires) {
			return nil // a renewal never shortens the lease
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET lease_owner = ?, lease_expires = ? WHERE id = ?`, lease.Owner, expires, id)
		return err
	})
	return s.wrap(err, "acquire", id)
}

// Append adds entries to the end of a run's journal for lease.Owner in
// one transaction, numbering them from the journal's last Seq plus one,
// and renews the lease to lease.Expires.
func (s *Store) Append(ctx context.Context, id string, lease store.Lease, entries ...store.Entry) error {
	times, err := entryTimes(entries)
	if err != nil {
		return fmt.Errorf("append to run %s: %w", id, err)
	}
	var expires string
	if lease.Owner != "" && !lease.Expires.IsZero() {
		if expires, err = columns.FormatTime(lease.Expires); err != nil {
			return fmt.Errorf("append to run %s: lease expiry: %w", id, err)
		}
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		heldExpires, last, err := s.readHead(ctx, tx, id, lease.Owner)
		if err != nil {
			return err
		}
		if expires > heldExpires { // times sort as their text
			if _, err := tx.StmtContext(ctx, s.renew).ExecContext(ctx, expires, id); err != nil {
				return err
			}
		}
		return s.insertEntries(ctx, tx, id, last, entries, times)
	})
	return s.wrap(err, "append to", id)
}

// readHead reads, in tx, the lease of run id, as its columns hold it, and
// the last Seq of its journal, for a write by owner: a *LeaseError unless
// owner holds the run.
func (s *Store) readHead(ctx context.Context, tx *sql.Tx, id, owner string) (heldExpires string, last int64, err error) {
	var heldOwner string
	err = tx.StmtContext(ctx, s.head).QueryRowContext(ctx, id).Scan(&heldOwner, &heldExpires, &last)
	if err != nil {
		return "", 0, notFound(err)
	}
	if heldOwner != owner { // the lease is parsed only to say whose it is
		held, err := columns.Lease(heldOwner, heldExpires)
		if err != nil {
			return "", 0, err
		}
		return "", 0, held.Fence(id, owner)
	}
	return heldExpires, last, nil
}

// inTx runs f in a transaction on the writer, BEGIN IMMEDIATE, and
// commits if f returns nil.
func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// insertEntries inserts entries into run id's journal after Seq last.
func (s *Store) insertEntries(ctx context.Context, tx *sql.Tx, id string, last int64, entries []store.Entry, times []string) error {
	if len(entries) == 0 {
		return nil
	}
	insert := tx.StmtContext(ctx, s.insert)
	for i, e := range entries {
		if _, err := insert.ExecContext(ctx, id, last+int64(i)+1, string(e.Type), e.Call, nullBytes(e.Data), times[i]); err != nil {
			return err
		}
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
			yield(store.Entry{}, s.wrap(err, "entries of", id))
			return
		}
		if n > 0 {
			return
		}
		// No entries: a run with none after after, or no run.
		var exists bool
		if err := s.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?)`, id).Scan(&exists); err != nil {
			yield(store.Entry{}, s.wrap(err, "entries of", id))
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
		if e.Time, parseTime = columns.ParseTime(tm); parseTime != nil {
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
	if err != nil {
		return store.Run{}, s.wrap(notFound(err), "load", id)
	}
	return run, nil
}

// Runs walks every run, most recently created first, then by id.
func (s *Store) Runs(ctx context.Context) iter.Seq2[store.Run, error] {
	return func(yield func(store.Run, error) bool) {
		rows, err := s.read.QueryContext(ctx, `SELECT `+runColumns+` FROM runs ORDER BY created DESC, id`)
		if err != nil {
			yield(store.Run{}, fmt.Errorf("runs: %s: %w", s.path, err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			if err := ctx.Err(); err != nil {
				yield(store.Run{}, fmt.Errorf("runs: %s: %w", s.path, err))
				return
			}
			run, err := scanRun(rows)
			if err != nil {
				// One run it cannot read does not hide the others.
				if !yield(store.Run{}, fmt.Errorf("runs: %s: %w", s.path, err)) {
					return
				}
				continue
			}
			if !yield(run, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(store.Run{}, fmt.Errorf("runs: %s: %w", s.path, err))
		}
	}
}

// wrap is columns.Wrap naming the database file in an error of the
// database, not in one of the store's own about the run (ErrNotFound,
// ErrExists, a *LeaseError).
func (s *Store) wrap(err error, what, id string) error {
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrExists) && !errors.Is(err, store.ErrLeased) {
		err = fmt.Errorf("%s: %w", s.path, err)
	}
	return columns.Wrap(err, what, id)
}

// runColumns are the columns of table runs, in the order of runValues.
const runColumns = `id, kind, idea, model, status, error, usage, parent, forked_at, spec, created, updated, lease_owner, lease_expires`

// runValues returns the values of run's columns, in the order of
// runColumns.
func runValues(run store.Run) ([]any, error) {
	c, err := columns.Texts(run)
	if err != nil {
		return nil, err
	}
	return []any{run.ID, run.Kind, run.Idea, run.Model, string(run.Status), run.Error, c.Usage,
		run.Parent, run.ForkedAt, nullBytes(run.Spec), c.Created, c.Updated, run.Lease.Owner, c.Expires}, nil
}

func scanRun(row interface{ Scan(...any) error }) (store.Run, error) {
	var (
		run    store.Run
		status string
		c      columns.Run
		owner  string
		spec   []byte
	)
	err := row.Scan(&run.ID, &run.Kind, &run.Idea, &run.Model, &status, &run.Error, &c.Usage,
		&run.Parent, &run.ForkedAt, &spec, &c.Created, &c.Updated, &owner, &c.Expires)
	if err != nil {
		return store.Run{}, err
	}
	run.Status, run.Spec = store.Status(status), spec
	if err := columns.Read(&run, c, owner); err != nil {
		return store.Run{}, err
	}
	return run, nil
}

// scanLease scans a run's lease_owner and lease_expires; no row is
// ErrNotFound.
func scanLease(row *sql.Row) (store.Lease, error) {
	var owner, expires string
	if err := row.Scan(&owner, &expires); err != nil {
		return store.Lease{}, notFound(err)
	}
	return columns.Lease(owner, expires)
}

// notFound returns store.ErrNotFound for sql.ErrNoRows, else err.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// entryTimes returns the times of entries as stored.
func entryTimes(entries []store.Entry) ([]string, error) {
	times := make([]string, len(entries))
	for i, e := range entries {
		var err error
		if times[i], err = columns.FormatTime(e.Time); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return times, nil
}

// nullBytes returns b, or nil (NULL) for a nil b.
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
