// Package postgres keeps runs in a PostgreSQL database, through
// github.com/jackc/pgx/v5. Its [Store] implements both [store.Store] and
// [store.Catalog], and several processes may share one database:
//
//	s, err := postgres.Open(ctx, "postgres://acts:secret@127.0.0.1:5432/acts")
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	for run, err := range s.Runs(ctx) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(run.ID, run.Status)
//	}
//
// # Concurrency
//
// Each write is one statement, so one round trip to the server. Create
// inserts the run with INSERT … ON CONFLICT (id) DO NOTHING, which waits
// for a concurrent insert of the same id to end: no row inserted is
// ErrExists. Save, Acquire and Append are an UPDATE of the run's row whose
// condition is the lease's rule (for Append, and a Save with entries, it
// also moves on runs.seq, the journal's last Seq, and the entries are
// numbered from there in the same statement; an Append also renews the
// lease). An UPDATE waits for the row's lock and then reads the row
// as the write before it left it, so that writes to one run, from any
// process, happen one after the other: one of two processes acquiring a
// run wins, and concurrent Appends get consecutive Seqs. A write the lease
// refuses reads the run's row again to say why.
//
// # Connection loss
//
// A write sent on a connection that broke under it, as when the server
// ended the connection while it sat idle in the pool (a restart,
// pg_terminate_backend), is sent again on another connection, up to once
// more than the pool has connections. It may have landed before the
// connection broke, so each write is safe to send twice: Create, Save and
// Append keep an id of their own in the run's row (runs.last_write) and do
// nothing when the row holds it already, then return nil as the first
// did; Acquire sent again renews the lease it took. Load, and Entries
// and Runs until they yielded an entry or a run, are sent again alike.
// So the store does not ping a connection idle for more than a second
// before it uses it, as pgxpool does by default, unless the URL sets
// pool_ping_timeout: that ping was a round trip more for the first write
// of each step of a run. A query the server
// refused on a sound connection, or whose ctx is done, is not sent again.
//
// # Schema
//
// Open creates tables runs and entries, and store_version, which holds
// the schema's version, if they do not exist, in the first schema of the
// connection's search_path (set it with the URL parameter search_path to
// keep several stores in one database).
//
// Strings (id, kind, idea, model, status, error, parent, the lease's
// owner, an entry's type and call) are bytea holding the caller's bytes:
// text refuses NUL and, in a UTF8 database, bytes that are not UTF-8,
// which a run's error or a tool's output may hold. To read them in psql,
// convert_from(error, 'UTF8') turns valid UTF-8 into text, and SET
// bytea_output = 'escape' shows the bytes. Data and Spec are bytea too,
// holding the caller's bytes unchanged (jsonb would reorder keys, respace
// and refuse \u0000); usage is jsonb. Times are text in RFC 3339 with nine
// fractional digits in UTC, which keeps the nanoseconds a timestamptz
// would drop and still casts to timestamptz in a query
// (created::timestamptz); lease_expires is the zero time when no one
// holds the run.
//
// # Versions
//
// The schema is at version 4. Open migrates tables of an earlier version
// in one transaction under an advisory lock. Version 1 had strings as
// text, no leases and no store_version: Open converts the strings to
// bytea, which rewrites the tables, and leaves the runs held by no one;
// stop the processes of version 1 first, as they do not check the
// version, and know neither leases nor bytea strings. Version 2 had no
// runs.seq: Open adds it, set from each run's journal; processes of
// version 2 still running may go on appending, as Append numbers from the
// journal when it is ahead of runs.seq. Version 3 had no runs.last_write:
// Open adds it, and processes of version 3 still running may go on
// writing, though their writes are not sent again. Open refuses tables of
// a later version.
package postgres
