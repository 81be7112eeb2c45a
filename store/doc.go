// Package store keeps runs durable: each run's metadata and its journal,
// the ordered record of everything the run did (messages appended, calls
// started and settled, solutions received), from which a run is resumed
// or forked after a crash.
//
// [Store] is the write side the agent uses while it runs; [Catalog] is the
// read side the CLI uses to list and inspect runs. [Memory] implements both
// for tests; the sqlite and postgres packages implement them for real use.
// storetest checks any implementation against the same conformance suite.
package store
