package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

type ev struct{ Type, Data string }

func events(t *testing.T, r io.Reader) ([]ev, error) {
	t.Helper()
	d := NewDecoder(r)
	var got []ev
	for d.Next() {
		got = append(got, ev{d.Event().Type, string(d.Event().Data)})
	}
	return got, d.Err()
}

func TestDecoder(t *testing.T) {
	const errLine = `{"error":{"message":"overloaded","type":"server_error"}}`
	for _, tt := range []struct {
		name, in string
		want     []ev
	}{
		{"data", "data: {\"a\":1}\n\ndata:{\"b\":2}\n\n", []ev{{"", `{"a":1}`}, {"", `{"b":2}`}}},
		{"event type", "event: message_start\ndata: {}\n\nevent: ping\ndata: {}\n\n", []ev{{"message_start", "{}"}, {"ping", "{}"}}},
		{"lines joined", "data: a\ndata: b\n\n", []ev{{"", "a\nb"}}},
		{"CRLF and lone CR", "data: a\r\n\r\ndata: b\r\rdata: c\r\n\n", []ev{{"", "a"}, {"", "b"}, {"", "c"}}},
		{"comments and other fields", ": keep-alive\nid: 7\nretry: 10\ndata: a\n\n", []ev{{"", "a"}}},
		{"blank data skipped", "data:\n\ndata:  \n\nevent: ping\n\ndata: a\n\n", []ev{{"", "a"}}},
		{"type does not outlive its event", "event: ping\n\ndata: a\n\n", []ev{{"", "a"}}},
		{"unfinished at the end", "data: a\n\ndata: b", []ev{{"", "a"}}},
		{"error line", "data: a\n\n" + errLine + "\n", []ev{{"", "a"}, {"error", errLine}}},
		{"error line ends the event being read", "data: a\n" + errLine + "\n\ndata: b\n\n", []ev{{"error", errLine}, {"", "b"}}},
		{"error event", "event: error\ndata: " + errLine + "\n\n", []ev{{"error", errLine}}},
		{"error event without data", "data: a\n\nevent: error\n\nevent: error\ndata:\n\n", []ev{{"", "a"}, {"error", ""}, {"error", ""}}},
		{"a byte order mark first", "\ufeffdata: a\n\ndata: \ufeffb\n\n", []ev{{"", "a"}, {"", "\ufeffb"}}},
		{"other JSON lines ignored", `{"status":"ok"}` + "\n" + `{"error":null}` + "\n" + `{"error"` + "\ndata: a\n\n", []ev{{"", "a"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := events(t, r)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(got, tt.want); diff != "" {
					t.Errorf("events (-got +want):\n%s", diff)
				}
			}
		})
	}
}

func TestDecoderErr(t *testing.T) {
	cut := errors.New("connection reset")
	got, err := events(t, io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(cut)))
	if !errors.Is(err, cut) {
		t.Errorf("error %v, want %v", err, cut)
	}
	if diff := cmp.Diff(got, []ev{{"", "a"}}); diff != "" {
		t.Errorf("events (-got +want):\n%s", diff)
	}
}
