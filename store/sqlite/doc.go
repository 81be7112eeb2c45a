// Package sqlite keeps runs in a SQLite database file, through the pure-Go
// driver modernc.org/sqlite (no cgo). Its [Store] implements both
// [store.Store] and [store.Catalog]:
//
//	s, err := sqlite.Open(ctx, "runs.db")
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	lease := store.Lease{Owner: "host/42", Expires: now.Add(time.Minute)}
//	run := store.Run{ID: id, Kind: "loop", Status: store.Running, Created: now, Updated: now, Lease: lease}
//	if err := s.Create(ctx, run); err != nil {
//		return err
//	}
//	err = s.Append(ctx, id, lease, store.Entry{Type: store.EntryMessage, Data: msg, Time: now})
//
// # Concurrency and durability
//
// Several processes may open one file. Each write (Create, Save, Acquire,
// Append) is one BEGIN IMMEDIATE transaction, which takes the database's
// write lock before it reads: Create inserts the run (INSERT … ON
// CONFLICT (id) DO NOTHING, no row inserted being ErrExists) and its
// entries; Save, Acquire and Append read the run's lease, check it and
// write, with no other writer in between, in this process or another. A
// writer waits up to [BusyTimeout] for the lock. Open switches a new file
// to WAL mode, a switch SQLite fails at once while another process holds
// the write lock, so Open tries it again until BusyTimeout. An error of
// the database names the file; one about a run (not found, held by
// another) does not.
//
// The database runs in WAL mode with synchronous=NORMAL: a write that
// returned survives the process being killed (SIGKILL, a panic, an OOM
// kill); a power cut may lose the last transactions but never corrupts
// the file.
//
// # Schema
//
// Table runs has one row per run (id primary key; usage as JSON text;
// the lease in lease_owner and lease_expires, "" and the zero time when
// no one holds the run) and table entries one row per journal entry
// (primary key run, seq). Strings are TEXT holding the caller's bytes
// unchanged: SQLite keeps a text's length and does not check its
// encoding, so NUL bytes and bytes that are not UTF-8 come back as they
// were (the sqlite3 shell may print such a text cut at the NUL). Data
// and Spec are BLOBs holding the caller's bytes unchanged. Times are TEXT
// in RFC 3339 with nine fractional digits in UTC
// ("2025-03-14T09:39:26.535897932Z"), which keeps nanoseconds and sorts
// as the times do; so times must lie in years 0 to 9999.
//
// The schema's version is the database's user_version, now 2. Open
// migrates a database of version 1, which had no leases, in place and in
// one transaction: its runs are then held by no one. It refuses a
// database of a later version, as programs of version 1 refuse one of
// version 2.
package sqlite
