// Package storetest checks an implementation of [store.Store] and
// [store.Catalog] against the behaviour their doc comments promise, as
// testing/fstest does for file systems and testing/slogtest for handlers.
//
// An implementation's test calls [Run] with a function that opens a new,
// empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) (store.Store, store.Catalog) {
//			s, err := mystore.Open(t.Context(), filepath.Join(t.TempDir(), "runs"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s, s
//		})
//	}
//
// A store that several processes may share also calls [RunProcesses],
// which runs the test binary again as processes racing on one database.
package storetest
