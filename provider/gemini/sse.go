package gemini

import (
	"bufio"
	"bytes"
	"io"
	"mime"
	"net/http"
)

// maxLine bounds one line of a stream, as the SDK's reader does.
const maxLine = 256 << 20

// sseTransport rewrites the body of each text/event-stream response into
// the one form the SDK's stream reader takes: each event as a single
// "data: " line followed by a blank line. That reader splits the body at
// blank lines and expects each piece to be one data line, so it fails on
// what the format allows and servers in front of the API may send:
// comment lines (": keep-alive"), the event, id and retry fields, data
// split over several lines, and lines ended by a lone CR. It wraps the
// transport that enforces the timeouts, so that comments still count as
// activity.
type sseTransport struct {
	base http.RoundTripper
}

func (t *sseTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		resp.Body = newEvents(resp.Body)
	}
	return resp, err
}

// events reads a stream of server-sent events as the format defines it
// and gives out the data of each event as "data: …\n\n"; the data lines
// of one event are joined by "\n". An event without data is dropped; one
// left unfinished by the end of the stream is given out, as the SDK's
// reader does.
type events struct {
	rc   io.ReadCloser
	sc   *bufio.Scanner
	data []byte // the data of the event being read
	has  bool   // whether it has a data field
	out  []byte // what is ready to be read
	err  error
}

func newEvents(rc io.ReadCloser) *events {
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 4096), maxLine)
	sc.Split(scanLine)
	return &events{rc: rc, sc: sc}
}

func (e *events) Read(p []byte) (int, error) {
	for len(e.out) == 0 && e.err == nil {
		if !e.sc.Scan() {
			e.err = e.sc.Err()
			if e.err == nil {
				e.err = io.EOF
				e.dispatch()
			}
			break
		}
		line := e.sc.Bytes()
		if len(line) == 0 {
			e.dispatch()
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if len(field) == 0 || string(field) != "data" {
			continue // a comment, or a field other than data
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if e.has {
			e.data = append(e.data, '\n')
		}
		e.data, e.has = append(e.data, value...), true
	}
	if len(e.out) > 0 {
		n := copy(p, e.out)
		e.out = e.out[n:]
		return n, nil
	}
	return 0, e.err
}

// dispatch ends the event being read.
func (e *events) dispatch() {
	if e.has && len(bytes.TrimSpace(e.data)) > 0 {
		e.out = append(append(append(e.out, "data: "...), e.data...), "\n\n"...)
	}
	e.data, e.has = e.data[:0], false
}

func (e *events) Close() error { return e.rc.Close() }

// scanLine splits lines ended by CRLF, LF or a lone CR, as the format
// allows.
func scanLine(data []byte, atEOF bool) (int, []byte, error) {
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
