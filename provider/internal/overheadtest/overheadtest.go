// Package overheadtest is the run that each adapter's
// BenchmarkAdapterOverhead measures: the two requests of a two-step,
// ten-call agent run, each answered by an SSE stream, sent once through the
// adapter and once as the same requests (body and headers) with net/http,
// the events decoded with encoding/json. The ratio of the two is the
// adapter's own cost.
package overheadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/augceo/agent/provider"
)

// Sizes are the sizes, in bytes of answer text, of the delta events the
// benchmark streams: 4 is a token or so, as models stream, and 256 is a
// server that batches.
var Sizes = []int{4, 256}

// Answers are the model's answers to the two requests of [Requests]: ten
// calls, then the output.
var Answers = [2]string{answer1(), answer2}

const answer2 = `{"calls":[],"output":{"status":"Success","message":"Refunded the three duplicate charges of cust_042 (USD 59.97 in all) and emailed the customer the receipt.","refunds":["ch_1001","ch_1002","ch_1003"]}}`

// step2Marker is in the last message of the second request only.
const step2Marker = "Results of step 1"

func answer1() string {
	calls := make([]string, 10)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"_tool":"%s","_outputPath":"state.r%d","customerId":"cust_042","limit":%d,"since":"2025-0%d-01T00:00:00Z"}`,
			toolNames[i], i, 10+i, 1+i%9)
	}
	return `{"calls":[` + strings.Join(calls, ",") + `],"output":null}`
}

var toolNames = [10]string{
	"listCharges", "listRefunds", "getCustomer", "findDuplicates", "issueRefund",
	"sendEmail", "createTicket", "updateLedger", "checkFraud", "notifyTeam",
}

// Schema returns the composed schema of the run, 5.6 KB: a solution with
// calls to ten tools, each with a few described parameters, and an output.
func Schema() json.RawMessage {
	tools := make([]string, len(toolNames))
	for i, name := range toolNames {
		tools[i] = fmt.Sprintf(`{"type":"object","description":"Tool %s: step %d of handling a billing case.",`+
			`"properties":{"_tool":{"const":"%s"},"_outputPath":{"type":"string","description":"Where in the state to write the result."},`+
			`"customerId":{"type":"string","description":"The customer's id, such as cust_123."},`+
			`"limit":{"type":"integer","description":"How many records, at most."},`+
			`"since":{"type":"string","description":"Only records after this time."}},`+
			`"required":["_tool","customerId"],"additionalProperties":false}`, name, i, name)
	}
	return json.RawMessage(`{"type":"object","description":"A solution: calls to make, and the output once done.","properties":{` +
		`"calls":{"type":"array","items":{"anyOf":[` + strings.Join(tools, ",") + `]}},` +
		`"output":{"anyOf":[{"type":"null"},{"type":"object","properties":{"status":{"type":"string","enum":["Success","Failed"]},` +
		`"message":{"type":"string","description":"What was done, for the customer."},"refunds":{"type":"array","items":{"type":"string"}}},` +
		`"required":["status","message"],"additionalProperties":false}]}},` +
		`"required":["calls","output"],"additionalProperties":false}`)
}

// Requests returns the two requests of the run, streamed, with no model:
// the adapter's Config names it.
func Requests() [2]*provider.Request {
	system := provider.Message{Role: provider.RoleSystem, Stable: true, Text: "You are a billing agent. " +
		strings.Repeat("Answer with one JSON solution: the calls to make, then the output once the results are in. ", 12)}
	user := provider.Message{Role: provider.RoleUser, Text: "Customer cust_042 says they were charged three times for one order. " +
		"Find the duplicate charges, refund them and tell the customer."}
	results := make([]string, 10)
	for i := range results {
		results[i] = fmt.Sprintf(`state.r%d = {"ok":true,"records":%d}`, i, 10+i)
	}
	req := func(msgs ...provider.Message) *provider.Request {
		return &provider.Request{
			Messages: msgs, Schema: Schema(), SchemaName: "solution", Stream: true,
			MaxTokens: 4096, CacheKey: "billing-agent",
		}
	}
	return [2]*provider.Request{
		req(system, user),
		req(system, user,
			provider.Message{Role: provider.RoleAssistant, Text: Answers[0]},
			provider.Message{Role: provider.RoleUser, Text: step2Marker + ":\n" + strings.Join(results, "\n")}),
	}
}

// Wire is what the benchmark needs of one adapter.
type Wire struct {
	// Path is the API's path under the server's URL.
	Path string
	// Stream renders answer as the body of an SSE stream whose text
	// events carry size bytes of it each.
	Stream func(answer string, size int) []byte
	// New returns the adapter, talking to baseURL (the server's URL)
	// through hc.
	New func(b *testing.B, hc *http.Client, baseURL string) provider.Provider
	// Decode reads an SSE stream and writes the answer's text to text; it
	// fails when the stream does not end as it should.
	Decode func(body io.Reader, text *strings.Builder) error
}

// Run runs, for each of [Sizes], the sub-benchmarks adapter (the two
// requests through the adapter) and raw (the same requests, body and
// headers, sent with net/http and the same events decoded with [ScanData]
// and encoding/json). The server writes each prebuilt stream at once, so
// the figures are the client's cost, not the pace of a network; it runs in
// the benchmark's process, so the raw side sends every header the adapter
// sent (an SDK's own headers among them), lest the server's reading of
// those count as the adapter's cost.
func Run(b *testing.B, w Wire) {
	reqs := Requests()
	for _, size := range Sizes {
		b.Run(fmt.Sprintf("event=%d", size), func(b *testing.B) {
			streams := [2][]byte{w.Stream(Answers[0], size), w.Stream(Answers[1], size)}
			var (
				mu     sync.Mutex
				bodies [2][]byte   // the last request body of each step
				header http.Header // the last request's headers
			)
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				body, err := io.ReadAll(r.Body)
				if err != nil || r.URL.Path != w.Path {
					http.Error(rw, fmt.Sprintf("%s: %v", r.URL.Path, err), http.StatusBadRequest)
					return
				}
				step := 0
				if bytes.Contains(body, []byte(step2Marker)) {
					step = 1
				}
				mu.Lock()
				bodies[step] = body
				header = r.Header.Clone()
				// The transport sets these from the request itself.
				header.Del("Content-Length")
				header.Del("Accept-Encoding")
				mu.Unlock()
				rw.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
				rw.Write(streams[step])
			}))
			defer srv.Close()
			p := w.New(b, srv.Client(), srv.URL)
			adapter := func(ctx context.Context, text *strings.Builder) error {
				for step, req := range reqs {
					text.Reset()
					for c, err := range p.Generate(ctx, req) {
						if err != nil {
							return err
						}
						text.WriteString(c.Text)
					}
					if text.String() != Answers[step] {
						return fmt.Errorf("step %d: got %q, want %q", step+1, text, Answers[step])
					}
				}
				return nil
			}
			var text strings.Builder
			// One run first, for the requests the raw client sends.
			if err := adapter(b.Context(), &text); err != nil {
				b.Fatal(err)
			}
			mu.Lock()
			sent, sentHeader := bodies, header
			mu.Unlock()
			raw := func(ctx context.Context, text *strings.Builder) error {
				for step, body := range sent {
					text.Reset()
					if err := post(ctx, srv.Client(), srv.URL+w.Path, sentHeader, body, text, w.Decode); err != nil {
						return err
					}
					if text.String() != Answers[step] {
						return fmt.Errorf("raw step %d: got %q, want %q", step+1, text, Answers[step])
					}
				}
				return nil
			}
			for _, bench := range []struct {
				name string
				run  func(context.Context, *strings.Builder) error
			}{{"adapter", adapter}, {"raw", raw}} {
				b.Run(bench.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if err := bench.run(b.Context(), &text); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// post sends body with the headers h and decodes the stream that answers
// it.
func post(ctx context.Context, hc *http.Client, url string, h http.Header, body []byte, text *strings.Builder,
	decode func(io.Reader, *strings.Builder) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", res.Status)
	}
	return decode(res.Body, text)
}

// ScanData calls f with the name and data of each event of an SSE stream,
// read with a bufio.Scanner, until f returns false; it fails with
// io.ErrUnexpectedEOF when the stream ends first. It is the plain reading
// that the Decode functions of the raw side build on, and handles only
// single-line data, which is all the benchmark's servers send.
func ScanData(r io.Reader, f func(event, data []byte) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var event []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("event: ")):
			event = append(event[:0], line[len("event: "):]...)
		case bytes.HasPrefix(line, []byte("data: ")):
			if !f(event, line[len("data: "):]) {
				return nil
			}
			event = event[:0]
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}
