package pgtest

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
)

// Counter counts what clients through a Proxy ask the server: each
// round trip is a wait for the server's ReadyForQuery, after a statement
// (the extended protocol's Sync, or a simple Query) or a connection's
// start.
type Counter struct {
	// RoundTrips counts the statements sent and answered, each a round
	// trip; Connects the connections opened.
	RoundTrips, Connects atomic.Int64
	// Pings counts the round trips that were pgx's pings (an empty
	// statement, "-- ping"), which pgxpool sends before handing out a
	// connection idle for more than a second; Prepares those that
	// prepared a statement (Parse) before the round trip running it.
	Pings, Prepares atomic.Int64
}

// Proxy starts a TCP proxy to the server of dsn, a URL, which counts
// into the Counter it returns, and returns dsn with the proxy as its
// host. It skips the test for a keyword/value dsn. The proxy closes when
// the test ends.
func Proxy(t testing.TB, dsn string) (string, *Counter) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" {
		t.Skip("the test database is not named by a URL")
	}
	target := u.Host
	if _, _, err := net.SplitHostPort(target); err != nil {
		target = net.JoinHostPort(target, "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c := &Counter{}
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			go c.pipe(client, target)
		}
	}()
	q := u.Query()
	q.Set("sslmode", "disable") // to read the messages
	u.RawQuery, u.Host = q.Encode(), ln.Addr().String()
	return u.String(), c
}

// pipe copies messages between client and the server at target,
// counting them.
func (c *Counter) pipe(client net.Conn, target string) {
	defer client.Close()
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	c.Connects.Add(1)
	go func() {
		defer server.Close()
		r := bufio.NewReader(client)
		// The startup message has no type byte.
		var n [4]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(n[:])-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if _, err := server.Write(append(n[:], body...)); err != nil {
			return
		}
		prepared := false
		for {
			msg, err := readMessage(r)
			if err != nil {
				return
			}
			switch msg[0] {
			case 'P': // Parse
				prepared = true
			case 'Q': // a simple Query: pgx pings with one
				if string(msg[5:len(msg)-1]) == "-- ping" {
					c.Pings.Add(1)
				}
			case 'S': // Sync: the end of an extended statement
				if prepared {
					c.Prepares.Add(1)
				}
				prepared = false
			}
			if _, err := server.Write(msg); err != nil {
				return
			}
		}
	}()
	r := bufio.NewReader(server)
	started := false
	for {
		msg, err := readMessage(r)
		if err != nil {
			return
		}
		if msg[0] == 'Z' { // ReadyForQuery
			if started {
				c.RoundTrips.Add(1)
			}
			started = true
		}
		if _, err := client.Write(msg); err != nil {
			return
		}
	}
}

// readMessage reads a message of the protocol: its type byte, its
// length, the rest.
func readMessage(r *bufio.Reader) ([]byte, error) {
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	msg := make([]byte, 1+binary.BigEndian.Uint32(hdr[1:]))
	copy(msg, hdr)
	if _, err := io.ReadFull(r, msg[5:]); err != nil {
		return nil, err
	}
	return msg, nil
}
