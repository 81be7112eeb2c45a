package limit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/provider"
)

// TestConnectTimeout dials through a transport whose dial never returns
// until cancelled.
func TestConnectTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		defer tr.CloseIdleConnections()
		c := Client(&http.Client{Transport: tr}, Config{Provider: "x", Connect: 10 * time.Second, FirstByte: time.Hour})
		start := time.Now()
		_, err := c.Get("http://provider.test/")
		want := &provider.TimeoutError{Provider: "x", Phase: provider.PhaseConnect, After: 10 * time.Second}
		if got, ok := errors.AsType[*provider.TimeoutError](err); !ok || !cmp.Equal(got, want) {
			t.Errorf("error %v, want %v", err, want)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("took %v, want 10s", d)
		}
	})
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Client(nil, Config{Provider: "x"}).Get("http://" + addr + "/")
	if !errors.Is(err, provider.ErrNoAnswer) {
		t.Errorf("error %v, want provider.ErrNoAnswer", err)
	}
}

func TestOr(t *testing.T) {
	for _, tt := range []struct{ v, want time.Duration }{{0, time.Minute}, {-1, 0}, {time.Second, time.Second}} {
		if got := Or(tt.v, time.Minute); got != tt.want {
			t.Errorf("Or(%v, 1m) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
