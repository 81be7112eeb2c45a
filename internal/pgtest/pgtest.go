// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema in the database ACTS_TEST_POSTGRES names, dropped when the test
// ends. Without that variable tests skip, except under CI, where they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// urlEnv names the variable holding the URL of a database the tests may
// create schemas in, such as
// postgres://postgres:postgres@127.0.0.1:5432/acts_test?sslmode=disable.
const urlEnv = "ACTS_TEST_POSTGRES"

// URL returns the database URL from urlEnv. Without one the test
// skips, except in CI (CI set), where it fails: tests never skip silently
// in CI.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(urlEnv)
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set, and CI is: CI must run the PostgreSQL tests", urlEnv)
		}
		t.Skipf("%s is not set", urlEnv)
	}
	return u
}

// withSearchPath returns dsn, a URL or keyword/value string, with its
// search_path set to schema.
func withSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s: %v", urlEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Schema creates a schema, which cleanup drops, and returns the URL of
// the test database with that schema as its search_path, so that tests
// and concurrent test runs sharing the database do not see each other.
func Schema(t testing.TB) string {
	t.Helper()
	dsn := URL(t)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", urlEnv, err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	schema := "storetest_" + strings.ToLower(rand.Text())
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is done by now.
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, dsn, schema)
}
