package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/augceo/agent/store"
)

// Store is a [store.Store] and [store.Catalog] in a PostgreSQL database.
// It is safe for concurrent use, also by several processes sharing the
// database: Append locks its run's row, so concurrent Appends to one run
// are numbered one after the other.
type Store struct {
	pool *pgxpool.Pool
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Catalog = (*Store)(nil)
)

// schema creates the tables. Times are text in a fixed-width RFC 3339
// form that keeps nanoseconds (timestamptz keeps microseconds); the "C"
// collation makes them sort as the times do.
const schema = `
CREATE TABLE IF NOT EXISTS runs (
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
CREATE INDEX IF NOT EXISTS runs_created ON runs (created DESC, id);
CREATE TABLE IF NOT EXISTS entries (
	run  text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	seq  bigint NOT NULL,
	type text NOT NULL,
	call text NOT NULL,
	data bytea,
	time text COLLATE "C" NOT NULL,
	PRIMARY KEY (run, seq)
);
`

// Open connects to the database at url, a PostgreSQL URL or keyword/value
// connection string as pgx accepts ("postgres://user:pass@host:5432/db",
// with pool settings such as pool_max_conns), and creates the tables if
// they do not exist, in the first schema of the search_path. ctx bounds
// the opening only.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	s := &Store{pool: pool}
	if err := s.init(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	return s, nil
}

// init creates the tables, under a lock, since concurrent CREATE TABLE IF
// NOT EXISTS statements can fail on each other.
func (s *Store) init(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('github.com/augceo/agent/store/postgres'))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, schema); err != nil {
			return fmt.Errorf("create tables: %w", err)
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
	_, err = s.pool.Exec(ctx, `
INSERT INTO runs (id, kind, idea, model, status, error, usage, parent, forked_at, spec, created, updated)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (id) DO UPDATE SET
	kind = excluded.kind, idea = excluded.idea, model = excluded.model,
	status = excluded.status, error = excluded.error, usage = excluded.usage,
	parent = excluded.parent, forked_at = excluded.forked_at, spec = excluded.spec,
	created = excluded.created, updated = excluded.updated`,
		run.ID, run.Kind, run.Idea, run.Model, string(run.Status), run.Error, string(usage),
		run.Parent, run.ForkedAt, []byte(run.Spec), created, updated)
	if err != nil {
		return fmt.Errorf("save run %s: %w", run.ID, err)
	}
	return nil
}

// Append adds entries to the end of a saved run's journal in one
// transaction, numbering them from the journal's last Seq plus one. It
// holds the run's row lock (SELECT … FOR UPDATE) until it commits.
func (s *Store) Append(ctx context.Context, id string, entries ...store.Entry) error {
	var (
		types = make([]string, len(entries))
		calls = make([]string, len(entries))
		data  = make([][]byte, len(entries))
		times = make([]string, len(entries))
	)
	for i, e := range entries {
		var err error
		if times[i], err = formatTime(e.Time); err != nil {
			return fmt.Errorf("append to run %s: entry %d: %w", id, i, err)
		}
		types[i], calls[i], data[i] = string(e.Type), e.Call, e.Data
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, id).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil || len(entries) == 0 {
			return err
		}
		// A statement of its own, after the lock: under READ COMMITTED its
		// snapshot then sees the entries of the Append that held it.
		_, err = tx.Exec(ctx, `
INSERT INTO entries (run, seq, type, call, data, time)
SELECT $1, (SELECT COALESCE(max(seq), 0) FROM entries WHERE run = $1) + x.n, x.type, x.call, x.data, x.time
FROM unnest($2::text[], $3::text[], $4::bytea[], $5::text[]) WITH ORDINALITY AS x(type, call, data, time, n)`,
			id, types, calls, data, times)
		return err
	})
	if err != nil {
		return fmt.Errorf("append to run %s: %w", id, err)
	}
	return nil
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
		// No entries: a saved run with none after after, or no run.
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = $1)`, id).Scan(&exists); err != nil {
			yield(store.Entry{}, fmt.Errorf("entries of run %s: %w", id, err))
		} else if !exists {
			yield(store.Entry{}, fmt.Errorf("entries of run %s: %w", id, store.ErrNotFound))
		}
	}
}

// entries yields the entries of run id after after and returns how many
// it yielded, or -1 if yield returned false.
func (s *Store) entries(ctx context.Context, id string, after int64, yield func(store.Entry, error) bool) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, type, call, data, time FROM entries WHERE run = $1 AND seq > $2 ORDER BY seq`, id, after)
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
			e       store.Entry
			typ, tm string
			data    []byte
		)
		if err := rows.Scan(&e.Seq, &typ, &e.Call, &data, &tm); err != nil {
			return n, err
		}
		e.Type, e.Data = store.EntryType(typ), data
		if e.Time, err = parseTime(tm); err != nil {
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
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
		rows, err := s.pool.Query(ctx, `SELECT `+runColumns+` FROM runs ORDER BY created DESC, id`)
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

func scanRun(row pgx.Row) (store.Run, error) {
	var (
		run                      store.Run
		status, created, updated string
		usage, spec              []byte
	)
	err := row.Scan(&run.ID, &run.Kind, &run.Idea, &run.Model, &status, &run.Error, &usage,
		&run.Parent, &run.ForkedAt, &spec, &created, &updated)
	if err != nil {
		return store.Run{}, err
	}
	run.Status, run.Spec = store.Status(status), spec
	if err := json.Unmarshal(usage, &run.Usage); err != nil {
		return store.Run{}, fmt.Errorf("run %s: usage: %w", run.ID, err)
	}
	if run.Created, err = parseTime(created); err != nil {
		return store.Run{}, fmt.Errorf("run %s: created: %w", run.ID, err)
	}
	if run.Updated, err = parseTime(updated); err != nil {
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

func parseTime(s string) (time.Time, error) {
	return time.Parse(timeLayout, s)
}
