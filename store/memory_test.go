package store_test

import (
	"testing"

	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, store.Catalog) {
		m := store.NewMemory()
		return m, m
	})
}
