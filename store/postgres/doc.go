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
// # Schema
//
// Open creates tables runs and entries, if they do not exist, in the
// first schema of the connection's search_path (set it with the URL
// parameter search_path to keep several stores in one database). Data and
// Spec are bytea holding the caller's bytes unchanged (jsonb would reorder
// keys and respace); usage is jsonb. Times are text in RFC 3339 with nine
// fractional digits in UTC, which keeps the nanoseconds a timestamptz
// would drop and still casts to timestamptz in a query (created::timestamptz).
//
// Each Append is one transaction that locks its run's row, so concurrent
// Appends to one run, from any process, get consecutive Seqs.
package postgres
