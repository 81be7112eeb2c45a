package store_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/store"
)

func TestUsageTotal(t *testing.T) {
	saved := store.Run{ID: "r", Usage: provider.Usage{Input: 99}}
	usage := func(seq int64, data string) store.Entry {
		return store.Entry{Seq: seq, Type: store.EntryUsage, Data: json.RawMessage(data)}
	}
	msg := store.Entry{Seq: 1, Type: store.EntryMessage, Data: json.RawMessage(`{"type":"text","text":"hi"}`)}

	// A journal without usage entries (written before they existed): the
	// usage saved with the run.
	var old store.UsageTotal
	if err := old.Add(msg); err != nil {
		t.Fatal(err)
	}
	if got := old.Of(saved); got != saved.Usage {
		t.Errorf("no usage entries: %+v", got)
	}

	// Usage entries: their sum, even when it is zero.
	var sum store.UsageTotal
	for _, e := range []store.Entry{msg, usage(2, `{"input":10,"output":3,"cacheRead":4}`), usage(3, `{"input":5,"thinking":2}`)} {
		if err := sum.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := sum.Of(saved), (provider.Usage{Input: 15, Output: 3, CacheRead: 4, Thinking: 2}); got != want {
		t.Errorf("sum %+v, want %+v", got, want)
	}
	var zero store.UsageTotal
	if err := zero.Add(usage(2, `{"input":0,"output":0}`)); err != nil {
		t.Fatal(err)
	}
	if got := zero.Of(saved); got != (provider.Usage{}) {
		t.Errorf("a journal whose requests cost nothing: %+v", got)
	}

	// A broken entry names itself.
	var bad store.UsageTotal
	if err := bad.Add(usage(7, `{"input":"many"}`)); err == nil || !strings.Contains(err.Error(), "usage entry 7") {
		t.Errorf("broken entry: %v", err)
	}
}

// TestUsageTotalLost: a usage entry marked lost (its stream broke before
// the provider said the usage) is counted, so that a total can say it is
// short.
func TestUsageTotalLost(t *testing.T) {
	var sum store.UsageTotal
	for i, data := range []string{`{"input":10}`, `{"input":0,"lost":true}`, `{"input":4,"lost":true}`} {
		if err := sum.Add(store.Entry{Seq: int64(i), Type: store.EntryUsage, Data: json.RawMessage(data)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := sum.Of(store.Run{}); got.Input != 14 {
		t.Errorf("sum %+v", got)
	}
	if sum.Lost() != 2 {
		t.Errorf("%d lost, want 2", sum.Lost())
	}
}
