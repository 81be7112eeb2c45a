package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/provider"
)

// repeats returns the maximal byte runs of s, at least min bytes long,
// that repeat an earlier run of s (without overlapping it), longest
// first.
func repeats(s string, min int) []string {
	first := map[string]int{}
	note := func(x int) {
		if _, ok := first[s[x:x+min]]; !ok {
			first[s[x:x+min]] = x
		}
	}
	var out []string
	for i := 0; i+min <= len(s); {
		j, ok := first[s[i:i+min]]
		if !ok || j+min > i {
			note(i)
			i++
			continue
		}
		n := min
		for i+n < len(s) && j+n < i && s[j+n] == s[i+n] {
			n++
		}
		out = append(out, s[i:i+n])
		for x := i; x < i+n && x+min <= len(s); x++ {
			note(x)
		}
		i += n
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// auditReport is the report the run of auditRun writes.
const auditReport = "Two orders checked, lamp-3 and desk-9; both ship tomorrow from the north warehouse, and the third order, chair-1, was loaded late in the day."

// auditRun is a long run of an agent that processes orders: plans of
// several calls with their reasons, eager and requested latent calls,
// state writes by several methods, instanced orders, a delegate, a
// call that fails and its repair, a plan that references what calls
// wrote. It returns the requests the provider received, all of them.
func auditRun(t *testing.T) []provider.Request {
	t.Helper()
	reg := echoReg()
	addLoad(reg)
	reg.Tool("summarize", json.RawMessage(`{"type":"object","description":"Summarizes a text in a sentence.","properties":{"text":{"type":"string"},"_output":{"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"]}},"required":["text"]}`))
	reg.Tool("stylist", json.RawMessage(`{"type":"object","description":"You write the customer letter for an order.","properties":{"order":{"type":"object"},"_output":{"type":"string"}},"required":["order"],"_delegate":"anonymous"}`))
	reg.Tool("send", json.RawMessage(`{"type":"object","description":"Sends the daily report to the team.","properties":{"text":{"type":"string"}},"required":["text"]}`))
	sent := 0
	reg.Activity("send", agent.ActivityFunc(func(ctx context.Context, c *agent.Call) (*agent.Result, error) {
		if sent++; sent == 1 {
			return nil, errors.New("mail server unavailable; try again in a minute")
		}
		return &agent.Result{Value: json.RawMessage(`{"id":"m-1"}`)}, nil
	}))
	msgs := ctxOf(t, `[{"type":"text","role":"system","text":"You are the operations assistant of a shop: check each order, write its letter, and send the team a report."},
		{"type":"tool","tool":"put"},{"type":"tool","tool":"load"},{"type":"tool","tool":"summarize"},{"type":"tool","tool":"stylist"},{"type":"tool","tool":"send"},
		{"type":"data","kind":"state","data":{"checked":[],"notes":{}},"description":"The work of the day so far."},
		{"type":"data","kind":"input","_instance":"o1","data":{"sku":"lamp-3","qty":2,"address":"12 Elm St, Springfield"},"description":"An order.","schema":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"},"address":{"type":"string"}}}},
		{"type":"data","kind":"input","_instance":"o2","data":{"sku":"desk-9","qty":1,"address":"4 Oak Ave, Shelbyville"},"description":"An order.","schema":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"},"address":{"type":"string"}}}},
		{"type":"text","text":"Process today's orders."}]`)
	why := func(s string) string { return `"_reasoningForCall":"` + s + `",` }
	answers := []string{
		// 1: check both orders, note the sizes, summarize the first (eager) and the second (its own request)
		`{"calls":[{` + why("Mark order o1 as checked so it is not processed twice.") + `"_tool":"put","_instance":"o1","v":{"ok":true,"weight":"3 kg"},"_outputPath":"†state.check"},` +
			`{` + why("Mark order o2 as checked so it is not processed twice.") + `"_tool":"put","_instance":"o2","v":{"ok":true,"weight":"21 kg"},"_outputPath":"†state.check"},` +
			`{` + why("Keep a list of the orders checked for the report.") + `"_tool":"put","v":"o1","_outputPath":"†state.checked","_outputMethod":"push"},` +
			`{` + why("Keep a list of the orders checked for the report.") + `"_tool":"put","v":"o2","_outputPath":"†state.checked","_outputMethod":"push"},` +
			`{` + why("The team wants a one-line summary of the first order.") + `"_tool":"summarize","text":"Order o1: two lamp-3 to 12 Elm St, Springfield.","_output":{"summary":"Two lamps to Springfield."},"_outputPath":"†state.notes.o1"},` +
			`{` + why("The team wants a one-line summary of the second order as well.") + `"_tool":"summarize","text":"Order o2: one desk-9 to 4 Oak Ave, Shelbyville.","_outputPath":"†state.notes.o2"}],"output":null}`,
		`{"output":{"summary":"One desk to Shelbyville."}}`,
		// 2: a late order, letters by the delegate, the report sent (fails)
		`{"calls":[{` + why("A third order came in; load it as an instance.") + `"_tool":"load","id":"o3","_outputPath":"†state.loaded"},` +
			`{` + why("The customer of o1 gets a letter written for the order.") + `"_tool":"stylist","_instance":"o1","order":"†input","_outputPath":"†state.letter"},` +
			`{` + why("Write the report now that the orders are checked.") + `"_tool":"put","v":"` + auditReport + `","_outputPath":"†state.report"},` +
			`{` + why("Send the report to the team as the day ends.") + `"_tool":"send","text":"†state.report","_outputPath":"†state.sent"}],"output":null}`,
		`{"output":"Dear customer, your two lamps ship tomorrow."}`,
		// 3: the repair, and the third order checked
		`{"calls":[{` + why("The mail server failed; send the report again.") + `"_tool":"send","text":"†state.report","_outputPath":"†state.sent"},` +
			`{` + why("Mark order o3 as checked.") + `"_tool":"put","_instance":"o3","v":{"ok":true,"weight":"7 kg"},"_outputPath":"†state.check"},` +
			`{` + why("Keep the list of the orders checked complete.") + `"_tool":"put","v":"o3","_outputPath":"†state.checked","_outputMethod":"push"},` +
			`{` + why("Count the orders of the day for the record.") + `"_tool":"put","v":{"orders":3,"items":4},"_outputPath":"†state.totals","_outputMethod":"merge"}],"output":null}`,
		// 4: more notes, one at a time
		`{"calls":[{` + why("Note the weight of the heaviest order for the carrier.") + `"_tool":"put","v":"desk-9, 21 kg","_outputPath":"†state.notes.heaviest"}],"output":null}`,
		`{"calls":[{` + why("Note that order o3 ships with the others.") + `"_tool":"put","v":"ships tomorrow","_outputPath":"†state.notes.o3"}],"output":null}`,
		`{"calls":[],"output":{"done":true}}`}
	_, reqs := runLoop(t, agent.Config{Registry: reg, Concurrency: 1}, msgs, answers...)
	return reqs
}

// TestTokenAudit runs auditRun and looks in every request for what it
// says twice: no byte run of 80 bytes or more may repeat an earlier one
// in a request's messages (the schema aside; shorter runs are the plans'
// own: calls of one tool alike, a failed call made again), and each
// request of the
// loop extends the one before (the schema changes once, where an
// instance first appears mid-run). The one run allowed is the report
// that put writes: the model wrote it as the call's parameter, which the
// plan shows, and the tool returned it, which the data update shows.
// -v logs each request's size and its longest repeated runs.
func TestTokenAudit(t *testing.T) {
	reqs := auditRun(t)
	loop := loopRequests(reqs)
	if len(loop) != 6 {
		t.Fatalf("%d loop requests, want 6", len(loop))
	}
	bare := slices.Clone(loop)
	schemas := 1
	for k := range bare {
		if k > 0 && string(loop[k].Schema) != string(loop[k-1].Schema) {
			schemas++
		}
		bare[k].Schema, bare[k].CacheKey = nil, ""
	}
	checkExtends(t, bare)
	if schemas != 2 {
		t.Errorf("%d composed schemas, want 2", schemas)
	}
	for i, r := range reqs {
		var msgs strings.Builder
		for _, m := range r.Messages {
			msgs.WriteString(string(m.Role) + ": " + m.Text + "\n")
		}
		reps := repeats(msgs.String(), 16)
		t.Logf("request %d: %d bytes, %d of messages; longest repeated runs: %q", i+1, len(sentBytes(r)), msgs.Len(), reps[:min(len(reps), 3)])
		for _, rep := range reps {
			if len(rep) >= 80 && !strings.Contains(auditReport, strings.Trim(rep, `"`)) {
				t.Errorf("request %d says %q twice:\n%s", i+1, rep, msgs.String())
			}
		}
	}
	_, total, uncached, cached := cacheFigures(loop)
	t.Logf("the loop's requests: %d bytes; input cost $%.4f uncached, $%.4f with the cache", total, uncached, cached)
}

func TestRepeats(t *testing.T) {
	for _, tt := range []struct {
		s    string
		min  int
		want []string
	}{
		{"abcdef-abcdef", 3, []string{"abcdef"}},
		{"aaaaaa", 3, []string{"aaa"}},
		{"abc-xyz-ab", 3, nil},
		{"0123456789 x 0123 y 456789", 4, []string{"456789", "0123"}},
	} {
		if got := repeats(tt.s, tt.min); !slices.Equal(got, tt.want) {
			t.Errorf("repeats(%q, %d) = %q, want %q", tt.s, tt.min, got, tt.want)
		}
	}
}
