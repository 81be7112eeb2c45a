// Package store keeps runs durable: each run's metadata and its journal,
// the ordered record of everything the run did (messages appended, calls
// started and settled, solutions received), from which a run is resumed
// or forked after a crash.
//
// [Store] is the write side the agent uses while it runs; [Catalog] is the
// read side the CLI uses to list and inspect runs. [Memory] implements both
// for tests; the sqlite and postgres packages implement them for real use.
// storetest checks any implementation against the same conformance suite.
// [Fork] branches a run at a message of its log, through any of them:
//
//	m := store.NewMemory()
//	lease := store.Lease{Owner: "host/42", Expires: now.Add(time.Minute)}
//	_ = m.Create(ctx, store.Run{ID: "r1", Kind: "loop", Status: store.Running, Created: now, Updated: now, Lease: lease})
//	_ = m.Append(ctx, "r1", lease, store.Entry{Type: store.EntryMessage, Data: msg, Time: now})
//	for e, err := range m.Entries(ctx, "r1", 0) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(e.Seq, e.Type) // 1 message
//	}
//	branch, err := store.Fork(ctx, m, m, "r1", 0, "r2", now) // r2 holds r1's first message
package store
