// Package sqlite keeps runs in a SQLite database file, through the pure-Go
// driver modernc.org/sqlite (no cgo). Its [Store] implements both
// [store.Store] and [store.Catalog]:
//
//	s, err := sqlite.Open(ctx, "runs.db")
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	if err := s.Save(ctx, store.Run{ID: id, Kind: "loop", Status: store.Running, Created: now, Updated: now}); err != nil {
//		return err
//	}
//	err = s.Append(ctx, id, store.Entry{Type: store.EntryMessage, Data: msg, Time: now})
//
// # Durability
//
// The database runs in WAL mode with synchronous=NORMAL: an Append that
// returned survives the process being killed (SIGKILL, a panic, an OOM
// kill); a power cut may lose the last transactions but never corrupts
// the file. Each Append is one transaction.
//
// # Schema
//
// Table runs has one row per run (id primary key; usage as JSON text) and
// table entries one row per journal entry (primary key run, seq). Data and
// Spec are BLOBs holding the caller's bytes unchanged. Times are TEXT in
// RFC 3339 with nine fractional digits in UTC ("2025-03-14T09:39:26.535897932Z"),
// which keeps nanoseconds and sorts as the times do; so times must lie in
// years 0 to 9999.
package sqlite
