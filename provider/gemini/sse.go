package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"

	"google.golang.org/genai"

	"github.com/augceo/agent/internal/runes"
	"github.com/augceo/agent/provider/internal/sse"
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
//
// It also keeps from the SDK the error that ends such a body (a broken
// connection, a timeout, a cap): the SDK prints it to the standard
// logger before it returns it, and this library logs through log/slog
// only, and leaves the standard logger to the program. The SDK is shown
// the end of the body instead, and the error goes to the exchange, where
// the adapter finds it (see responses).
type sseTransport struct {
	base http.RoundTripper
}

func (t *sseTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		e := newEvents(resp.Body)
		e.ex, _ = r.Context().Value(exchangeKey{}).(*exchange)
		resp.Body = e
	}
	return resp, err
}

// events reads a stream of server-sent events as the format defines it
// and gives out the data of each event as "data: …\n\n"; the data lines
// of one event are joined by "\n". An event without data is dropped; one
// left unfinished by the end of the stream is given out, as the SDK's
// reader does. An error event, and an error written as a bare line of
// JSON (see package sse), is given out as the data of an error the SDK
// reads (see errorData): the SDK itself takes the data of every event
// for an answer, and our reader would drop the bare line.
type events struct {
	rc   io.ReadCloser
	ex   *exchange // where the error that ends the body goes; nil: returned
	sc   *bufio.Scanner
	typ  string // the type of the event being read
	data []byte // the data of the event being read
	has  bool   // whether it has a data field
	out  []byte // what is ready to be read
	err  error
}

func newEvents(rc io.ReadCloser) *events {
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 4096), maxLine)
	sc.Split(sse.ScanLine)
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
		if sse.ErrorLine(line) {
			e.typ, e.data, e.has = "error", append(e.data[:0], line...), true
			e.dispatch()
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			e.typ = string(value)
		case "data":
			// An empty data line adds only a newline, and the SDK's
			// reader would take "\n\n" inside the data for the end of
			// the event: it is left out, which the JSON of the data
			// reads alike.
			if len(e.data) > 0 && len(value) > 0 {
				e.data = append(e.data, '\n')
			}
			e.data, e.has = append(e.data, value...), true
		}
	}
	if len(e.out) > 0 {
		n := copy(p, e.out)
		e.out = e.out[n:]
		return n, nil
	}
	if e.err != io.EOF && e.ex != nil {
		e.ex.readErr = e.err
		return 0, io.EOF
	}
	return 0, e.err
}

// dispatch ends the event being read.
func (e *events) dispatch() {
	// An error event says the stream failed, with a message or without:
	// it is not skipped as blank.
	if e.has && len(bytes.TrimSpace(e.data)) > 0 || e.typ == "error" {
		data := e.data
		if e.typ == "error" {
			data = errorData(data)
		}
		e.out = append(append(append(e.out, "data: "...), data...), "\n\n"...)
	}
	e.typ, e.data, e.has = "", e.data[:0], false
}

// Close closes the body. Its error is not returned: the SDK would print
// it to the standard logger, and the answer was read, or failed, before.
func (e *events) Close() error {
	e.rc.Close()
	return nil
}

// errorData returns the data of an error event as the SDK reads an
// error, {"error":{"code":…,"message":…,"status":…}}: as it is when it
// is one already (the API's own), else with the message found in it
// (OpenAI's error.message, an error or message that is text) or the
// data itself as the message. It is one line of JSON either way.
func errorData(data []byte) []byte {
	var api struct {
		Error *genai.APIError `json:"error"`
	}
	if json.Unmarshal(data, &api) == nil && api.Error != nil {
		var b bytes.Buffer
		if json.Compact(&b, data) == nil {
			return b.Bytes()
		}
	}
	msg := string(bytes.TrimSpace(data))
	if msg == "" {
		msg = "an error event without a message"
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(data, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var text string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case json.Unmarshal(v.Error, &text) == nil && text != "":
			msg = text
		case v.Message != "":
			msg = v.Message
		}
	}
	b, _ := json.Marshal(struct {
		Error genai.APIError `json:"error"`
	}{genai.APIError{Message: runes.Truncate(msg, maxErrorText)}})
	return b
}

// maxErrorText bounds the message of an error event that is not the
// API's.
const maxErrorText = 500
