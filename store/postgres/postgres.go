package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/internal/columns"
)

// Store is a [store.Store] and [store.Catalog] in a PostgreSQL database.
// It is safe for concurrent use, also by several processes sharing the
// database: each write is one statement that updates its run's row, so
// concurrent writes to one run, from any process, happen one after the
// other.
type Store struct {
	pool *pgxpool.Pool
	// tries bounds how often send sends a query: once more than the
	// pool has connections.
	tries int
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Catalog = (*Store)(nil)
)

// migrations[v] takes the tables from schema version v to v+1; new
// tables go through all of them. Times are text in a fixed-width RFC
// 3339 form that keeps nanoseconds (timestamptz keeps microseconds); the
// "C" collation makes them sort as the times do.
var migrations = []string{
	0: `
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
`,
	// Version 2 keeps strings as bytea, which holds NUL and bytes that are
	// not UTF-8, adds leases (no one holds the runs of version 1), and
	// table store_version.
	1: `
ALTER TABLE entries DROP CONSTRAINT entries_run_fkey;
ALTER TABLE runs
	ALTER COLUMN id TYPE bytea USING convert_to(id, 'UTF8'),
	ALTER COLUMN kind TYPE bytea USING convert_to(kind, 'UTF8'),
	ALTER COLUMN idea TYPE bytea USING convert_to(idea, 'UTF8'),
	ALTER COLUMN model TYPE bytea USING convert_to(model, 'UTF8'),
	ALTER COLUMN status TYPE bytea USING convert_to(status, 'UTF8'),
	ALTER COLUMN error TYPE bytea USING convert_to(error, 'UTF8'),
	ALTER COLUMN parent TYPE bytea USING convert_to(parent, 'UTF8'),
	ADD COLUMN lease_owner bytea NOT NULL DEFAULT '',
	ADD COLUMN lease_expires text COLLATE "C" NOT NULL DEFAULT '0001-01-01T00:00:00.000000000Z';
ALTER TABLE entries
	ALTER COLUMN run TYPE bytea USING convert_to(run, 'UTF8'),
	ALTER COLUMN type TYPE bytea USING convert_to(type, 'UTF8'),
	ALTER COLUMN call TYPE bytea USING convert_to(call, 'UTF8'),
	ADD FOREIGN KEY (run) REFERENCES runs (id) ON DELETE CASCADE;
CREATE TABLE store_version (version integer NOT NULL);
INSERT INTO store_version VALUES (2);
`,
	// Version 3 keeps each run's last Seq in runs.seq, so that an Append
	// numbers its entries in the statement that checks the lease.
	2: `
ALTER TABLE runs ADD COLUMN seq bigint NOT NULL DEFAULT 0;
UPDATE runs SET seq = e.seq FROM (SELECT run, max(seq) AS seq FROM entries GROUP BY run) e WHERE runs.id = e.run;
`,
	// Version 4 keeps in runs.last_write the id of the last Create, Save
	// or Append of each run, so that one sent again after its connection
	// broke finds out whether it landed (see Store.send).
	3: `
ALTER TABLE runs ADD COLUMN last_write bytea NOT NULL DEFAULT '';
`,
}

// schemaVersion is the version of the tables this package makes or
// migrates to.
var schemaVersion = len(migrations)

// Open connects to the database at url, a PostgreSQL URL or keyword/value
// connection string as pgx accepts ("postgres://user:pass@host:5432/db",
// with pool settings such as pool_max_conns), and creates the tables if
// they do not exist, in the first schema of the search_path, or migrates
// tables of an earlier schema version (see the package doc). ctx bounds
// the opening only.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if cfg.PingTimeout == 0 {
		// pgxpool pings a connection idle for more than a second before
		// it hands it out: a round trip more for the first write of each
		// step, which follows the model's answer. A query sent on a
		// connection that broke is sent again on another (see send), so
		// the ping finds nothing the query does not. pool_ping_timeout in
		// the URL keeps the pings, bounded.
		cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s := &Store{pool: pool, tries: int(cfg.MaxConns) + 1}
	if err := s.init(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	return s, nil
}

// init creates or migrates the tables, in one transaction under a lock,
// since stores opening together would otherwise fail on each other.
func (s *Store) init(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('github.com/augceo/agent/store/postgres'))`); err != nil {
			return err
		}
		var (
			schema         *string
			runs, versions bool
		)
		err := tx.QueryRow(ctx, `
SELECT current_schema(),
	to_regclass(quote_ident(current_schema()) || '.runs') IS NOT NULL,
	to_regclass(quote_ident(current_schema()) || '.store_version') IS NOT NULL`).Scan(&schema, &runs, &versions)
		if err != nil {
			return err
		}
		if schema == nil {
			return errors.New("no schema of the search_path exists to create the tables in")
		}
		// Version 1 had no table store_version.
		version := 0
		switch {
		case versions:
			if err := tx.QueryRow(ctx, `SELECT version FROM store_version`).Scan(&version); err != nil {
				return fmt.Errorf("schema version: %w", err)
			}
		case runs:
			version = 1
		}
		if version > schemaVersion {
			return fmt.Errorf("database schema version %d is newer than this program's %d", version, schemaVersion)
		}
		for v := version; v < schemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate schema version %d to %d: %w", v, v+1, err)
			}
		}
		if version < schemaVersion {
			if _, err := tx.Exec(ctx, `UPDATE store_version SET version = $1`, schemaVersion); err != nil {
				return err
			}
		}
		return nil
	})
}

// Close closes the connections, waiting for those in use to be released.
// It returns nil; it has an error result to be an io.Closer.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Create saves a new run and its first entries in one statement, or
// returns ErrExists.
func (s *Store) Create(ctx context.Context, run store.Run, entries ...store.Entry) error {
	cols, err := runValues(run)
	if err != nil {
		return fmt.Errorf("create run %s: %w", run.ID, err)
	}
	es, err := entryValues(entries)
	if err != nil {
		return fmt.Errorf("create run %s: %w", run.ID, err)
	}
	var created int
	token := writeID()
	err = s.send(ctx, `
WITH run AS (
	INSERT INTO runs (`+runColumns+`, seq, last_write)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, cardinality($15::bytea[]), $19)
	ON CONFLICT (id) DO NOTHING
	RETURNING 0 AS base
), `+insertEntries(15)+`
SELECT count(*) FROM run`, append(cols, es.types, es.calls, es.data, es.times, token), &created)
	if err == nil && created == 0 {
		// The run exists: made by this Create if it was sent again after
		// its connection broke and the first one landed.
		var last []byte
		err = s.send(ctx, `SELECT last_write FROM runs WHERE id = $1`, []any{[]byte(run.ID)}, &last)
		if err == nil && !bytes.Equal(last, token) {
			err = store.ErrExists
		}
	}
	return columns.Wrap(err, "create", run.ID)
}

// Save replaces the metadata of a run for owner and appends entries to
// its journal, in one statement that writes only if owner holds the
// run's lease, numbering the entries as Append does.
func (s *Store) Save(ctx context.Context, owner string, run store.Run, entries ...store.Entry) error {
	cols, err := runValues(run)
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	es, err := entryValues(entries)
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	fence := func(l store.Lease) error { return l.Fence(run.ID, owner) }
	token := writeID()
	// The SET expressions read the row as it was: a holder that keeps its
	// lease never shortens it (times sort as text).
	update := `
	UPDATE runs SET kind = $2, idea = $3, model = $4, status = $5, error = $6, usage = $7, parent = $8,
		forked_at = $9, spec = $10, created = $11, updated = $12, lease_owner = $13,
		lease_expires = CASE WHEN $13::bytea <> '' AND $13::bytea = $15::bytea THEN GREATEST(lease_expires, $14) ELSE $14 END,
		last_write = $16`
	where := `
	WHERE id = $1 AND lease_owner = $15 AND last_write <> $16`
	args := append(cols, []byte(owner), token)
	if len(entries) == 0 { // no insert, which the entries' triggers would see
		err = s.write(ctx, run.ID, owner, token, fence, `
WITH run AS (`+update+where+`
	RETURNING 1
)
SELECT count(*) FROM run`, args...)
		return columns.Wrap(err, "save", run.ID)
	}
	err = s.write(ctx, run.ID, owner, token, fence, `
WITH run AS (`+update+`,
		seq = GREATEST(seq, (SELECT COALESCE(max(seq), 0) FROM entries WHERE run = $1)) + cardinality($17::bytea[])`+where+`
	RETURNING seq - cardinality($17::bytea[]) AS base
), `+insertEntries(17)+`
SELECT count(*) FROM run`, append(args, es.types, es.calls, es.data, es.times)...)
	return columns.Wrap(err, "save", run.ID)
}

// Acquire leases a run to lease.Owner, in one statement that writes the
// lease only if the run's holder lets it go; see [store.Store.Acquire].
func (s *Store) Acquire(ctx context.Context, id string, lease store.Lease, now time.Time) error {
	expires, err := columns.FormatTime(lease.Expires)
	if err != nil {
		return fmt.Errorf("acquire run %s: lease expiry: %w", id, err)
	}
	// The condition is store.Lease.Yield's: no holder, the same one, or
	// one whose lease expired at or before now (times sort as text). A now
	// past the years a lease's expiry can hold is after all of them.
	at, err := columns.FormatTime(now)
	switch {
	case err == nil:
	case now.After(time.Time{}):
		at = columns.MaxTime
	default:
		at = ""
	}
	// No write id: sent again after it landed, an Acquire renews the lease
	// it took, to the same expiry. A renewal never shortens the lease (the
	// SET expressions read the row as it was).
	yield := func(l store.Lease) error { return l.Yield(id, lease.Owner, now) }
	err = s.write(ctx, id, lease.Owner, nil, yield, `
WITH run AS (
	UPDATE runs SET lease_owner = $2, lease_expires = CASE WHEN lease_owner = $2 THEN GREATEST(lease_expires, $3) ELSE $3 END
	WHERE id = $1 AND (lease_owner = '' OR lease_owner = $2 OR lease_expires <= $4)
	RETURNING 1
)
SELECT count(*) FROM run`,
		[]byte(id), []byte(lease.Owner), expires, at)
	return columns.Wrap(err, "acquire", id)
}

// Append adds entries to the end of a run's journal for lease.Owner,
// in one statement: it writes only if lease.Owner holds the run's lease,
// renews the lease to lease.Expires, and numbers the entries from the
// run's last Seq, which it moves on in the run's row. Waiting for that
// row's lock puts concurrent writes to one run one after the other, and
// the statement then reads the row as the write before it left it.
func (s *Store) Append(ctx context.Context, id string, lease store.Lease, entries ...store.Entry) error {
	es, err := entryValues(entries)
	if err != nil {
		return fmt.Errorf("append to run %s: %w", id, err)
	}
	var expires string // "" sorts before every expiry: no renewal
	if lease.Owner != "" && !lease.Expires.IsZero() {
		if expires, err = columns.FormatTime(lease.Expires); err != nil {
			return fmt.Errorf("append to run %s: lease expiry: %w", id, err)
		}
	}
	// GREATEST with the journal's own last Seq: a process of schema
	// version 2, still open after another migrated the tables, appends
	// without moving runs.seq on.
	fence := func(l store.Lease) error { return l.Fence(id, lease.Owner) }
	token := writeID()
	err = s.write(ctx, id, lease.Owner, token, fence, `
WITH run AS (
	UPDATE runs SET seq = GREATEST(seq, (SELECT COALESCE(max(seq), 0) FROM entries WHERE run = $1)) + cardinality($3::bytea[]),
		lease_expires = GREATEST(lease_expires, $8), last_write = $7
	WHERE id = $1 AND lease_owner = $2 AND last_write <> $7
	RETURNING seq - cardinality($3::bytea[]) AS base
), `+insertEntries(3)+`
SELECT count(*) FROM run`, []byte(id), []byte(lease.Owner), es.types, es.calls, es.data, es.times, token, expires)
	return columns.Wrap(err, "append to", id)
}

// insertEntries is a query's part that appends entries to run $1's
// journal, numbered on from base, the only column of the query's CTE run,
// which has one row for a write and none for one refused. The entries'
// columns (types, calls, data, times) are the parameters from $p on.
func insertEntries(p int) string {
	return fmt.Sprintf(`entries AS (
	INSERT INTO entries (run, seq, type, call, data, time)
	SELECT $1, run.base + x.n, x.type, x.call, x.data, x.time
	FROM run, unnest($%d::bytea[], $%d::bytea[], $%d::bytea[], $%d::text[]) WITH ORDINALITY AS x(type, call, data, time, n)
)`, p, p+1, p+2, p+3)
}

// write runs query, a write to run id for owner that returns how many
// runs it wrote: none when the run's lease keeps owner out, or, for a
// write with an id (token), when the run's last write has that id. Then
// it says why: nothing when the run's last write is this one (it landed
// before it was sent again, see send), else ErrNotFound, or the
// *LeaseError rule gives for the lease as it is by then. A lease that
// rule lets owner in by then changed between the two statements: the
// write is tried again.
func (s *Store) write(ctx context.Context, id, owner string, token []byte, rule func(store.Lease) error, query string, args ...any) error {
	for range maxWriteTries {
		var wrote int
		if err := s.send(ctx, query, args, &wrote); err != nil {
			return err
		}
		if wrote > 0 {
			return nil
		}
		var (
			held, last []byte
			expires    string
		)
		err := s.send(ctx, `SELECT lease_owner, lease_expires, last_write FROM runs WHERE id = $1`, []any{[]byte(id)}, &held, &expires, &last)
		if err != nil {
			return notFound(err)
		}
		if token != nil && bytes.Equal(last, token) {
			return nil
		}
		lease, err := columns.Lease(string(held), expires)
		if err != nil {
			return err
		}
		if err := rule(lease); err != nil {
			return err
		}
	}
	return fmt.Errorf("the lease kept changing while %q wrote", owner)
}

// maxWriteTries bounds how often write tries again.
const maxWriteTries = 5

// send runs query and scans its one row into dest, sending it again, on
// another connection, when the one it went on broke: pgx says the query
// was never sent (pgconn.SafeToRetry), or the connection is closed after
// the error, as when the server ended it while it sat idle in the pool
// (pg_terminate_backend, a restart): pgx writes the query before it reads
// the server's goodbye. Closed under a query it sent, the connection
// leaves unknown whether the query ran, so every query sent here must be
// one that, run twice, does what it does once: reads; Acquire, which
// renews the lease it took; and the writes with an id in runs.last_write
// (Create, Save, Append), which do nothing when the run's last write has
// their id, and whose caller then finds that id there. The journal's
// entries are numbered by the server, so without that id an Append sent
// again would add them twice. A query the server refused on a sound
// connection (a constraint, a lock timeout) is not sent again, and
// neither is one whose ctx is done. Each try closes a broken connection,
// so with every connection of the pool ended at once the last try opens
// a new one.
func (s *Store) send(ctx context.Context, query string, args []any, dest ...any) error {
	return s.sendScan(ctx, query, args, func(r pgx.Row) error { return r.Scan(dest...) })
}

// sendScan is send with scan reading the row.
func (s *Store) sendScan(ctx context.Context, query string, args []any, scan func(pgx.Row) error) error {
	return s.onConn(ctx, func(c *pgxpool.Conn) (bool, error) {
		return true, scan(c.QueryRow(ctx, query, args...))
	})
}

// onConn runs f on a connection of the pool, and again on another, up to
// s.tries times, while f says it may (the query it sent may run twice)
// and the connection broke under it; see send.
func (s *Store) onConn(ctx context.Context, f func(*pgxpool.Conn) (again bool, err error)) error {
	var err error
	for range s.tries {
		var c *pgxpool.Conn
		if c, err = s.pool.Acquire(ctx); err != nil {
			return err
		}
		var again bool
		again, err = f(c)
		broke := c.Conn().IsClosed()
		c.Release()
		if err == nil || !again || ctx.Err() != nil || !broke && !pgconn.SafeToRetry(err) {
			return err
		}
	}
	return fmt.Errorf("sent %d times, on a connection that broke each time: %w", s.tries, err)
}

// writeID returns a new id for a write, unique among the writes of every
// process, for runs.last_write.
func writeID() []byte {
	return []byte(rand.Text())
}

// entryColumns holds the columns of entries to insert, one array each.
type entryColumns struct {
	types, calls, data [][]byte
	times              []string
}

func entryValues(entries []store.Entry) (entryColumns, error) {
	es := entryColumns{
		types: make([][]byte, len(entries)),
		calls: make([][]byte, len(entries)),
		data:  make([][]byte, len(entries)),
		times: make([]string, len(entries)),
	}
	for i, e := range entries {
		var err error
		if es.times[i], err = columns.FormatTime(e.Time); err != nil {
			return entryColumns{}, fmt.Errorf("entry %d: %w", i, err)
		}
		es.types[i], es.calls[i], es.data[i] = []byte(e.Type), []byte(e.Call), e.Data
	}
	return es, nil
}

// Entries walks a run's journal from the first entry whose Seq is greater
// than after, in one statement: it sees the entries committed before it
// started. Breaking out of the loop releases its connection.
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
		// No entries: a run with none after after, or no run.
		var exists bool
		if err := s.send(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1)`, []any{[]byte(id)}, &exists); err != nil {
			yield(store.Entry{}, fmt.Errorf("entries of run %s: %w", id, err))
		} else if !exists {
			yield(store.Entry{}, fmt.Errorf("entries of run %s: %w", id, store.ErrNotFound))
		}
	}
}

// entries yields the entries of run id after after and returns how many
// it yielded, or -1 if yield returned false. The query is sent again, as
// send does, when its connection broke before it yielded an entry.
func (s *Store) entries(ctx context.Context, id string, after int64, yield func(store.Entry, error) bool) (int, error) {
	var n int
	err := s.onConn(ctx, func(c *pgxpool.Conn) (bool, error) {
		var err error
		n, err = readEntries(ctx, c, id, after, yield)
		return n == 0, err
	})
	return n, err
}

// readEntries is entries on connection c.
func readEntries(ctx context.Context, c *pgxpool.Conn, id string, after int64, yield func(store.Entry, error) bool) (int, error) {
	rows, err := c.Query(ctx, `SELECT seq, type, call, data, time FROM entries WHERE run = $1 AND seq > $2 ORDER BY seq`, []byte(id), after)
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
			e               store.Entry
			typ, call, data []byte
			tm              string
		)
		if err := rows.Scan(&e.Seq, &typ, &call, &data, &tm); err != nil {
			return n, err
		}
		e.Type, e.Call, e.Data = store.EntryType(typ), string(call), data
		if e.Time, err = columns.ParseTime(tm); err != nil {
			return n, fmt.Errorf("entry %d: %w", e.Seq, err)
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
	var run store.Run
	err := s.sendScan(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, []any{[]byte(id)}, func(r pgx.Row) (err error) {
		run, err = scanRun(r)
		return err
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("load run %s: %w", id, notFound(err))
	}
	return run, nil
}

// Runs walks every run, most recently created first, then by id, in one
// statement, sent again, as send does, when its connection broke before
// it yielded a run. Breaking out of the loop releases its connection.
func (s *Store) Runs(ctx context.Context) iter.Seq2[store.Run, error] {
	return func(yield func(store.Run, error) bool) {
		err := s.onConn(ctx, func(c *pgxpool.Conn) (bool, error) {
			n, err := readRuns(ctx, c, yield)
			return n == 0, err
		})
		if err != nil {
			yield(store.Run{}, fmt.Errorf("runs: %w", err))
		}
	}
}

// readRuns is Runs on connection c. It returns how many runs (or errors
// reading one) it yielded, or -1 if yield returned false.
func readRuns(ctx context.Context, c *pgxpool.Conn, yield func(store.Run, error) bool) (int, error) {
	rows, err := c.Query(ctx, `SELECT `+runColumns+` FROM runs ORDER BY created DESC, id`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		run, err := scanRun(rows)
		if err != nil {
			// One run it cannot read does not hide the others.
			err = fmt.Errorf("runs: %w", err)
		}
		if !yield(run, err) {
			return -1, nil
		}
		n++
	}
	return n, rows.Err()
}

// runColumns are the columns of table runs, in the order of runValues.
const runColumns = `id, kind, idea, model, status, error, usage, parent, forked_at, spec, created, updated, lease_owner, lease_expires`

// runValues returns the values of run's columns, in the order of
// runColumns: strings as bytes, for bytea.
func runValues(run store.Run) ([]any, error) {
	c, err := columns.Texts(run)
	if err != nil {
		return nil, err
	}
	return []any{[]byte(run.ID), []byte(run.Kind), []byte(run.Idea), []byte(run.Model), []byte(run.Status),
		[]byte(run.Error), c.Usage, []byte(run.Parent), run.ForkedAt, []byte(run.Spec), c.Created, c.Updated,
		[]byte(run.Lease.Owner), c.Expires}, nil
}

func scanRun(row pgx.Row) (store.Run, error) {
	var (
		run                                         store.Run
		id, kind, idea, model, status, text, parent []byte
		usage, spec, owner                          []byte
		c                                           columns.Run
	)
	err := row.Scan(&id, &kind, &idea, &model, &status, &text, &usage,
		&parent, &run.ForkedAt, &spec, &c.Created, &c.Updated, &owner, &c.Expires)
	if err != nil {
		return store.Run{}, err
	}
	run.ID, run.Kind, run.Idea, run.Model = string(id), string(kind), string(idea), string(model)
	run.Status, run.Error, run.Parent, run.Spec = store.Status(status), string(text), string(parent), spec
	c.Usage = string(usage)
	if err := columns.Read(&run, c, string(owner)); err != nil {
		return store.Run{}, err
	}
	return run, nil
}

// notFound returns store.ErrNotFound for pgx.ErrNoRows, else err.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}
