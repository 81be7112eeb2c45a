package postgres_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/augceo/agent/internal/pgtest"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/postgres"
)

// withParams returns the URL u with the query parameters kv set, or
// skips the test when the database is named by a keyword/value string.
func withParams(t *testing.T, u string, kv ...string) *url.URL {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "postgres" && p.Scheme != "postgresql" {
		t.Skip("the test database is not named by a URL")
	}
	q := p.Query()
	for i := 0; i < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	p.RawQuery = q.Encode()
	return p
}

// journalOf reads run id's journal as "seq type call" lines.
func journalOf(t *testing.T, s *postgres.Store, id string) []string {
	t.Helper()
	var es []string
	for e, err := range s.Entries(t.Context(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, fmt.Sprint(e.Seq, " ", e.Type, " ", e.Call))
	}
	return es
}

// TestWritesAfterConnectionsEnded: the server ended every connection of
// the store's pool while it sat idle (pg_terminate_backend, as a restart
// does). Each kind of write that follows, and each read (Entries, Load,
// Runs), sent on a connection the server ended, is sent again on another
// and succeeds, and the journal holds each Append's entries once.
func TestWritesAfterConnectionsEnded(t *testing.T) {
	app := "acts_" + strings.ToLower(rand.Text()[:10])
	u := withParams(t, pgtest.Schema(t), "application_name", app, "pool_max_conns", "3")
	s := open(t, u.String())
	ctx := t.Context()
	now := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	lease := store.Lease{Owner: "me", Expires: now.Add(time.Minute)}
	entry := func(call string) store.Entry {
		return store.Entry{Type: store.EntryStarted, Call: call, Data: json.RawMessage(`{}`), Time: now}
	}
	end := func(t *testing.T) {
		t.Helper()
		// Every connection of the pool in use at once, then idle.
		loaded := make(chan error, 3)
		for range 3 {
			go func() {
				_, err := s.Load(ctx, "nothing")
				loaded <- err
			}()
		}
		for range 3 {
			<-loaded
		}
		n := 0
		err := pgxQueryRow(t, pgtest.URL(t), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app, &n)
		if err != nil || n == 0 {
			t.Fatalf("terminated %d connections: %v", n, err)
		}
	}
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"create", func() error { return s.Create(ctx, store.Run{ID: "r", Lease: lease}, entry("a")) }},
		{"acquire", func() error { return s.Acquire(ctx, "r", lease, now) }},
		{"append", func() error { return s.Append(ctx, "r", store.Lease{Owner: "me"}, entry("b"), entry("c")) }},
		{"save", func() error { return s.Save(ctx, "me", store.Run{ID: "r", Status: store.Done, Lease: lease}) }},
		{"append again", func() error { return s.Append(ctx, "r", store.Lease{Owner: "me"}, entry("d")) }},
		{"release", func() error { return s.Save(ctx, "me", store.Run{ID: "r", Status: store.Done}) }},
	} {
		end(t)
		if err := w.write(); err != nil {
			t.Fatalf("%s after the server ended the connections: %v", w.name, err)
		}
	}
	// And so is a read.
	end(t)
	want := []string{"1 started a", "2 started b", "3 started c", "4 started d"}
	if got := journalOf(t, s, "r"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("journal %q, want %q", got, want)
	}
	end(t)
	if run, err := s.Load(ctx, "r"); err != nil || run.Status != store.Done || run.Lease.Owner != "" {
		t.Errorf("run %+v, %v", run, err)
	}
	end(t)
	var runs []string
	for run, err := range s.Runs(ctx) {
		if err != nil {
			t.Fatalf("runs after the server ended the connections: %v", err)
		}
		runs = append(runs, run.ID+" "+string(run.Status))
	}
	if want := []string{"r done"}; strings.Join(runs, "\n") != strings.Join(want, "\n") {
		t.Errorf("runs %q, want %q", runs, want)
	}
}

// pgxQueryRow runs query on a connection of its own to url.
func pgxQueryRow(t *testing.T, url, query string, arg any, dest ...any) error {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	return conn.QueryRow(t.Context(), query, arg).Scan(dest...)
}

// cutter is a TCP proxy to a PostgreSQL server that, when armed, lets
// the next statement to complete run and commit, and closes the
// connection before its answer reaches the client: a write that landed
// and whose caller cannot know it.
type cutter struct {
	target string
	armed  atomic.Bool
	cuts   atomic.Int64
}

func (c *cutter) serve(ln net.Listener) {
	for {
		client, err := ln.Accept()
		if err != nil {
			return
		}
		go c.pipe(client)
	}
}

func (c *cutter) pipe(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", c.target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		io.Copy(server, client)
		server.Close()
	}()
	// The server's messages: a type byte, then their length.
	r := bufio.NewReader(server)
	completed := false
	for {
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(r, hdr); err != nil {
			return
		}
		msg := make([]byte, 5+binary.BigEndian.Uint32(hdr[1:])-4)
		copy(msg, hdr)
		if _, err := io.ReadFull(r, msg[5:]); err != nil {
			return
		}
		switch {
		case hdr[0] == 'C' && c.armed.Load():
			// CommandComplete: held back.
			completed = true
			continue
		case hdr[0] == 'Z' && completed && c.armed.CompareAndSwap(true, false):
			// ReadyForQuery: the statement's transaction committed.
			c.cuts.Add(1)
			return
		}
		if _, err := client.Write(msg); err != nil {
			return
		}
	}
}

// TestWriteLandedAnswerLost: a write committed, and its connection broke
// before its answer came. The write is sent again, finds that it landed
// and returns nil: an Append does not add its entries twice, a Create
// does not find its own run taken, a Save that gave the lease up does
// not find the run held by no one.
func TestWriteLandedAnswerLost(t *testing.T) {
	u := withParams(t, pgtest.Schema(t), "sslmode", "disable")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := &cutter{target: u.Host}
	if _, _, err := net.SplitHostPort(c.target); err != nil {
		c.target = net.JoinHostPort(c.target, "5432")
	}
	go c.serve(ln)
	u.Host = ln.Addr().String()
	s := open(t, u.String())
	ctx := t.Context()
	now := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	lease := store.Lease{Owner: "me", Expires: now.Add(time.Minute)}
	entry := func(call string) store.Entry {
		return store.Entry{Type: store.EntryStarted, Call: call, Data: json.RawMessage(`{}`), Time: now}
	}
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"create", func() error { return s.Create(ctx, store.Run{ID: "r", Lease: lease}, entry("a")) }},
		{"append", func() error { return s.Append(ctx, "r", store.Lease{Owner: "me"}, entry("b"), entry("c")) }},
		{"save", func() error { return s.Save(ctx, "me", store.Run{ID: "r", Status: store.Running, Lease: lease}) }},
		{"acquire", func() error { return s.Acquire(ctx, "r", lease, now) }},
		{"append again", func() error { return s.Append(ctx, "r", store.Lease{Owner: "me"}, entry("d")) }},
		{"release", func() error { return s.Save(ctx, "me", store.Run{ID: "r", Status: store.Done}) }},
	} {
		c.armed.Store(true)
		cuts := c.cuts.Load()
		if err := w.write(); err != nil {
			t.Fatalf("%s whose answer was lost: %v", w.name, err)
		}
		if c.cuts.Load() != cuts+1 {
			t.Fatalf("%s: the proxy did not cut its answer", w.name)
		}
	}
	want := []string{"1 started a", "2 started b", "3 started c", "4 started d"}
	if got := journalOf(t, s, "r"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("journal %q, want %q", got, want)
	}
	if run, err := s.Load(ctx, "r"); err != nil || run.Status != store.Done || run.Lease.Owner != "" {
		t.Errorf("run %+v, %v", run, err)
	}
}

// TestWriteRefusedSentOnce: a write the server refused on a sound
// connection (here a trigger) fails with the server's error and is not
// sent again.
func TestWriteRefusedSentOnce(t *testing.T) {
	url := pgtest.Schema(t)
	s := open(t, url)
	ctx := t.Context()
	now := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	if err := s.Create(ctx, store.Run{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	execSQL(t, url, `
CREATE SEQUENCE tries;
CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM nextval('tries');
	RAISE EXCEPTION 'the journal is closed';
END $$;
CREATE TRIGGER refuse BEFORE INSERT ON entries FOR EACH STATEMENT EXECUTE FUNCTION refuse();`)
	err := s.Append(ctx, "r", store.Lease{Owner: ""}, store.Entry{Type: store.EntryStarted, Call: "a", Time: now})
	if err == nil || !strings.Contains(err.Error(), "append to run r: ERROR: the journal is closed") {
		t.Fatalf("Append the server refused: %v", err)
	}
	var tries int64
	if err := pgxQueryRow(t, url, `SELECT last_value FROM tries WHERE $1`, true, &tries); err != nil || tries != 1 {
		t.Errorf("the Append was sent %d times (%v)", tries, err)
	}
}

// TestWriteAfterIdleOneRoundTrip: a write on a connection idle for more
// than a second (a run's first write after the model answered) is one
// round trip to the server. pgxpool would ping the connection first; a
// write on one that broke is sent again anyway (see
// TestWritesAfterConnectionsEnded). With pool_ping_timeout set in the
// URL, the ping stays.
func TestWriteAfterIdleOneRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name      string
		params    []string
		roundTrip int64 // per write after the connection sat idle
	}{
		{"default", []string{"pool_max_conns", "1"}, 1},
		{"pool_ping_timeout", []string{"pool_max_conns", "1", "pool_ping_timeout", "5s"}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u, count := pgtest.Proxy(t, pgtest.Schema(t))
			s := open(t, withParams(t, u, tt.params...).String())
			ctx := t.Context()
			now := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
			lease := store.Lease{Owner: "me", Expires: now.Add(time.Minute)}
			entry := store.Entry{Type: store.EntryStarted, Call: "a", Data: json.RawMessage(`{}`), Time: now}
			if err := s.Create(ctx, store.Run{ID: "r", Lease: lease}, entry); err != nil {
				t.Fatal(err)
			}
			for _, write := range []func() error{
				func() error { return s.Append(ctx, "r", store.Lease{Owner: "me"}, entry) },
				func() error { return s.Acquire(ctx, "r", lease, now) },
			} {
				// Each statement is prepared on its first use on a connection.
				if err := write(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(1100 * time.Millisecond) // pgxpool pings after a second
				before, pings := count.RoundTrips.Load(), count.Pings.Load()
				if err := write(); err != nil {
					t.Fatal(err)
				}
				if n, p := count.RoundTrips.Load()-before, count.Pings.Load()-pings; n != tt.roundTrip || p != tt.roundTrip-1 {
					t.Errorf("a write after the connection sat idle made %d round trips, %d of them pings; want %d", n, p, tt.roundTrip)
				}
			}
		})
	}
}
