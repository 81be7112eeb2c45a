package postgres_test

import (
	"sync"
	"testing"

	"github.com/augceo/agent/internal/pgtest"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/postgres"
	"github.com/augceo/agent/store/storetest"
)

// open opens a Store in a new schema.
func open(t testing.TB) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), pgtest.Schema(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	pgtest.URL(t) // skip or fail once, not in every subtest
	storetest.Run(t, func(t *testing.T) (store.Store, store.Catalog) {
		s := open(t)
		return s, s
	})
}

// TestOpenConcurrently opens stores on one new schema at once, as
// processes starting together do: creating the tables must not fail.
func TestOpenConcurrently(t *testing.T) {
	dsn := pgtest.Schema(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), dsn)
			if err != nil {
				t.Errorf("Open: %v", err)
				return
			}
			defer s.Close()
			if err := s.Save(t.Context(), store.Run{ID: "r"}); err != nil {
				t.Errorf("Save: %v", err)
			}
		})
	}
	wg.Wait()
}
