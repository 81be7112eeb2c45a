// Package sse reads the server-sent events of the adapters' streams as
// the format defines them, and also the errors that servers write into a
// stream outside it.
//
// Some OpenAI-compatible servers and proxies write an error into a 200
// stream as a bare line of JSON, {"error":{...}}, without "data:". The
// format makes it a field with an unknown name, to be ignored, and the
// SDKs' readers drop it: the stream then ends cut, or empty, and the
// server's message is lost. [Decoder] returns such a line as an event of
// type "error", as the servers that mean it as one would have sent it.
package sse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// MaxLine bounds one line of a stream, as the SDKs' readers do.
const MaxLine = 32 << 20

// Event is one event of a stream.
type Event struct {
	// Type is the event's "event" field, "" when it has none, and
	// "error" for an error line (see [ErrorLine]).
	Type string
	// Data is the event's data lines, joined by "\n".
	Data []byte
}

// Decoder reads the events of a stream. Like the SDKs' readers, it
// drops the event left unfinished at the end of the stream.
type Decoder struct {
	sc      *bufio.Scanner
	data    []byte // the data of the event being read, reused for the next
	ev      Event
	started bool // a line was read: a byte order mark is no longer the stream's
}

// NewDecoder returns a Decoder reading r.
func NewDecoder(r io.Reader) *Decoder {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, MaxLine)
	sc.Split(ScanLine)
	return &Decoder{sc: sc}
}

// Next reads the next event with data, skipping those whose data is
// blank, but for an error event; it reports false at the end of the stream or on an error of the
// reader (see [Decoder.Err]).
func (d *Decoder) Next() bool {
	typ, has := "", false
	d.data = d.data[:0]
	for d.sc.Scan() {
		line := d.sc.Bytes()
		if !d.started {
			// The format lets a stream begin with a byte order mark.
			line, d.started = bytes.TrimPrefix(line, []byte("\ufeff")), true
		}
		if len(line) == 0 {
			// An error event says the stream failed, with a message or
			// without: it is not skipped as blank.
			if has && len(bytes.TrimSpace(d.data)) > 0 || typ == "error" {
				d.ev = Event{Type: typ, Data: d.data}
				return true
			}
			typ, has, d.data = "", false, d.data[:0]
			continue
		}
		if ErrorLine(line) {
			d.data = append(d.data[:0], line...)
			d.ev = Event{Type: "error", Data: d.data}
			return true
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			typ = string(value)
		case "data":
			if has {
				d.data = append(d.data, '\n')
			}
			d.data, has = append(d.data, value...), true
		}
	}
	return false
}

// Event returns the event Next read. Its Data is valid until the next
// call of Next.
func (d *Decoder) Event() Event { return d.ev }

// Err returns the reader's error that ended the stream, nil at its end.
func (d *Decoder) Err() error { return d.sc.Err() }

// ErrorLine reports whether line, read where the format expects a field,
// is a JSON object with a non-null "error" member: an error a server
// wrote without "data:".
func ErrorLine(line []byte) bool {
	if len(line) == 0 || line[0] != '{' {
		return false // the usual case, decided on the first byte
	}
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(line, &v) == nil && len(v.Error) > 0 && string(v.Error) != "null"
}

// ScanLine is a bufio.SplitFunc for the lines of a stream, ended by CRLF,
// LF or a lone CR, as the format allows.
func ScanLine(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexAny(data, "\r\n")
	switch {
	case i < 0:
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data):
		if data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		return i + 1, data[:i], nil
	case atEOF:
		return i + 1, data[:i], nil
	}
	return 0, nil, nil // a CR that may start a CRLF
}
