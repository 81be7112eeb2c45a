package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/provider/scripted"
	"github.com/augceo/agent/store"
)

// chatTurn returns the answers of a conversation's turn k: a step that
// writes a note, then the output.
func chatTurn(k int) []scripted.Response {
	return []scripted.Response{
		costly(fmt.Sprintf(`{"calls":[{"_tool":"note","v":%d,"_outputPath":"†state.t%d"}],"output":null}`, k, k)),
		costly(fmt.Sprintf(`{"calls":[],"output":{"turn":%d}}`, k)),
	}
}

// chatSaid is what the user says in turn k.
func chatSaid(k int) message.Message { return message.Text(fmt.Sprintf("turn %d, please", k)) }

var chatSchema = json.RawMessage(`{"type":"object","properties":{"turn":{"type":"integer"}}}`)

// chatConfig is a conversation's config: a turn's limits are the
// limits of a run, so three turns of two steps each, 36 tokens, must
// end under them.
func chatConfig(st store.Store) agent.Config {
	reg, _ := cacheAgent(1)
	return agent.Config{Registry: reg, Concurrency: 1, Clock: fixed, Store: st, MaxSteps: 2, TokenBudget: 20}
}

// answerOf is a run's answer as the next turn's context holds it.
func answerOf(res *agent.RunResult) message.Message {
	return message.Assistant(string(res.Solution.Output))
}

// freshTurns runs a conversation of turns turns as docs/loop.md says,
// one new durable run a turn, each with its own store: the requests and
// the log of each turn, and how many journal entries each run wrote
// beyond its context.
func freshTurns(t *testing.T, turns int) (reqs [][]provider.Request, logs [][]message.Message, added []int) {
	t.Helper()
	return freshTurnsRendered(t, turns, agent.RenderCached)
}

// freshTurnsRendered is freshTurns with the runs' rendering.
func freshTurnsRendered(t *testing.T, turns int, rendering agent.Rendering) (reqs [][]provider.Request, logs [][]message.Message, added []int) {
	t.Helper()
	msgs := append(cacheContext(), chatSaid(1))
	for k := 1; k <= turns; k++ {
		st := store.NewMemory()
		p := scripted.New(chatTurn(k)...)
		cfg := chatConfig(st)
		cfg.Rendering = rendering
		cfg.Provider, cfg.RunID = p, "fresh"
		res, err := agent.Run(t.Context(), cfg, chatSchema, msgs)
		if err != nil {
			t.Fatalf("fresh turn %d: %v", k, err)
		}
		reqs, logs = append(reqs, p.Requests()), append(logs, res.Log.Messages())
		added = append(added, len(journal(t, st, "fresh"))-len(msgs))
		msgs = append(res.Log.Messages(), answerOf(res), chatSaid(k+1))
	}
	return reqs, logs, added
}

// sameTurn checks that got, the requests of a turn, are want, as the
// provider reads them.
func sameTurn(t *testing.T, turn int, got, want []provider.Request) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("turn %d: %d requests, want %d", turn, len(got), len(want))
	}
	for i := range got {
		if g, w := sentBytes(got[i]), sentBytes(want[i]); g != w {
			t.Errorf("turn %d, request %d: %s", turn, i+1, firstDiff(w, g))
		}
		if g, w := breakpoints(got[i]), breakpoints(want[i]); g != w {
			t.Errorf("turn %d, request %d: breakpoints at messages %v, want %v", turn, i+1, g, w)
		}
	}
}

func TestContinue(t *testing.T) { forEachStore(t, testContinue) }

// A conversation of three turns in one run, each turn Continue of the
// run: each turn sends the requests a new run over the conversation
// sends, byte for byte, and its first extends the turn before's last;
// the log is the new run's; the journal grows by what the turn adds.
func testContinue(t *testing.T, st runStore) {
	const turns = 3
	wantReqs, wantLogs, wantAdded := freshTurns(t, turns)
	cfg := chatConfig(st)
	p := scripted.New(chatTurn(1)...)
	cfg.Provider, cfg.RunID = p, "chat"
	if _, err := agent.Run(t.Context(), cfg, chatSchema, append(cacheContext(), chatSaid(1))); err != nil {
		t.Fatal(err)
	}
	sameTurn(t, 1, p.Requests(), wantReqs[0])
	last := p.Requests()
	entries := len(journal(t, st, "chat"))
	for k := 2; k <= turns; k++ {
		// A Config of its own: the run's settings come from the store.
		reg, _ := cacheAgent(1)
		p := scripted.New(chatTurn(k)...)
		said := chatSaid(k)
		res, err := agent.Continue(t.Context(), agent.Config{Provider: p, Registry: reg, Clock: fixed, Store: st}, "chat", said)
		if err != nil {
			t.Fatalf("turn %d: %v", k, err)
		}
		if res.RunID != "chat" || res.Steps != 2*k || res.Usage != scaled(stepUsage, 2*k) {
			t.Errorf("turn %d: run %q, %d steps, usage %+v", k, res.RunID, res.Steps, res.Usage)
		}
		sameTurn(t, k, p.Requests(), wantReqs[k-1])
		for _, b := range prefixBreaks([]provider.Request{last[len(last)-1], p.Requests()[0]}) {
			t.Errorf("turn %d: %s", k, b)
		}
		last = p.Requests()
		if got, want := logJSON(t, res.Log.Messages()), logJSON(t, wantLogs[k-1]); !slices.Equal(got, want) {
			t.Errorf("turn %d: log\n%s\nwant\n%s", k, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		journalHolds(t, st, "chat", res.Log)
		n := len(journal(t, st, "chat"))
		if got, want := n-entries, wantAdded[k-1]+2; got != want { // its answer and the user's message
			t.Errorf("turn %d added %d journal entries, want %d", k, got, want)
		}
		entries = n
		run, err := st.Load(t.Context(), "chat")
		if err != nil || run.Status != store.Done || run.Lease.Owner != "" || run.Usage != res.Usage {
			t.Errorf("turn %d: the run after it: %+v, %v", k, run, err)
		}
		// A resume of the continued run returns its last turn's result.
		again, err := agent.Resume(t.Context(), agent.Config{Store: st}, "chat")
		if err != nil || string(again.Solution.Output) != string(res.Solution.Output) || again.Log.Len() != res.Log.Len() {
			t.Errorf("turn %d: resume of the done run: %v", k, err)
		}
	}
}

// TestContinueOneWriteOpensTurn: Continue makes the run running again
// and journals the turn's first messages (the run's answer, the user's
// message) in one write, a Save with those entries.
func TestContinueOneWriteOpensTurn(t *testing.T) {
	st := &appendsStore{Memory: store.NewMemory()}
	cfg := chatConfig(st)
	cfg.Provider, cfg.RunID = scripted.New(chatTurn(1)...), "chat"
	if _, err := agent.Run(t.Context(), cfg, chatSchema, append(cacheContext(), chatSaid(1))); err != nil {
		t.Fatal(err)
	}
	st.appends, st.saved = nil, nil
	reg, _ := cacheAgent(1)
	if _, err := agent.Continue(t.Context(), agent.Config{Provider: scripted.New(chatTurn(2)...), Registry: reg, Clock: fixed, Store: st}, "chat", chatSaid(2)); err != nil {
		t.Fatal(err)
	}
	if len(st.appends) == 0 {
		t.Fatal("Continue wrote nothing")
	}
	first, run := st.appends[0], st.saved[0]
	var said []string
	for _, e := range first {
		if e.Type == store.EntryMessage {
			said = append(said, string(e.Data))
		}
	}
	if run.Status != store.Running || len(said) != 2 || len(first) != 2 || !strings.Contains(said[1], "turn 2, please") {
		t.Errorf("Continue's first write saved the run %q with entries %v; want it running, with the answer and the message", run.Status, entryTypes(first))
	}
}

func scaled(u provider.Usage, n int) provider.Usage {
	return provider.Usage{Input: u.Input * n, Output: u.Output * n}
}

func TestContinueEvents(t *testing.T) { forEachStore(t, testContinueEvents) }

// While a turn runs, the run is running and held; the messages given are
// the caller's: writing over them does not change the turn.
func testContinueEvents(t *testing.T, st runStore) {
	wantReqs, wantLogs, _ := freshTurns(t, 2)
	cfg := chatConfig(st)
	cfg.Provider, cfg.RunID = scripted.New(chatTurn(1)...), "chat"
	if _, err := agent.Run(t.Context(), cfg, chatSchema, append(cacheContext(), chatSaid(1))); err != nil {
		t.Fatal(err)
	}
	p := scripted.New(chatTurn(2)...)
	cfg.Provider, cfg.RunID = p, ""
	said := []message.Message{chatSaid(2)}
	said[0].Text = strings.Clone(said[0].Text)
	var res *agent.RunResult
	for ev, err := range agent.ContinueEvents(t.Context(), cfg, "chat", said...) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == agent.EventStep && ev.Step == 3 {
			said[0].Text, said[0].Role = "scribbled", message.RoleAssistant
			run, err := st.Load(t.Context(), "chat")
			if err != nil || run.Status != store.Running || run.Lease.Owner == "" {
				t.Errorf("the run during its turn: %+v, %v", run, err)
			}
		}
		if ev.Kind == agent.EventDone {
			res = ev.Result
		}
	}
	sameTurn(t, 2, p.Requests(), wantReqs[1])
	if got, want := logJSON(t, res.Log.Messages()), logJSON(t, wantLogs[1]); !slices.Equal(got, want) {
		t.Errorf("log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	journalHolds(t, st, "chat", res.Log)
	// The result is the caller's too.
	for _, m := range res.Log.Messages() {
		scribble(m.Data)
	}
	again, err := agent.Resume(t.Context(), agent.Config{Store: st}, "chat")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := logJSON(t, again.Log.Messages()), logJSON(t, wantLogs[1]); !slices.Equal(got, want) {
		t.Errorf("the journal after the caller wrote over the result:\n%s", strings.Join(got, "\n"))
	}
}

func TestContinueResume(t *testing.T) { forEachStore(t, testContinueResume) }

// A continued turn cut as its second request goes out (Ctrl-C), then
// resumed, sends the requests of the uncut turn (the cut one again),
// within the turn's limits, and the run goes on with a third turn.
func testContinueResume(t *testing.T, st runStore) {
	wantReqs, wantLogs, _ := freshTurns(t, 3)
	cfg := chatConfig(st)
	cfg.Provider, cfg.RunID = scripted.New(chatTurn(1)...), "chat"
	if _, err := agent.Run(t.Context(), cfg, chatSchema, append(cacheContext(), chatSaid(1))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first := scripted.New(chatTurn(2)...)
	cut := provider.Func(func(c context.Context, req *provider.Request) iter.Seq2[*provider.Chunk, error] {
		if len(first.Requests()) == 1 {
			cancel()
			return func(yield func(*provider.Chunk, error) bool) { yield(nil, c.Err()) }
		}
		return first.Generate(c, req)
	})
	cfg.Provider, cfg.RunID = cut, ""
	if _, err := agent.Continue(ctx, cfg, "chat", chatSaid(2)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cut turn: %v", err)
	}
	if run, _ := st.Load(t.Context(), "chat"); run.Status != store.Interrupted {
		t.Fatalf("the cut run is %s", run.Status)
	}
	// Unfinished, it is resumed, not continued.
	if _, err := agent.Continue(t.Context(), cfg, "chat", chatSaid(2)); !errors.Is(err, agent.ErrUnfinished) {
		t.Fatalf("continue of the cut run: %v", err)
	}
	rest := scripted.New(chatTurn(2)[1:]...)
	cfg.Provider = rest
	res, err := agent.Resume(t.Context(), cfg, "chat")
	if err != nil {
		t.Fatal(err)
	}
	sameTurn(t, 2, append(first.Requests(), rest.Requests()...), wantReqs[1])
	if got, want := logJSON(t, res.Log.Messages()), logJSON(t, wantLogs[1]); !slices.Equal(got, want) {
		t.Errorf("log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	p := scripted.New(chatTurn(3)...)
	cfg.Provider = p
	if res, err = agent.Continue(t.Context(), cfg, "chat", chatSaid(3)); err != nil {
		t.Fatal(err)
	}
	sameTurn(t, 3, p.Requests(), wantReqs[2])
	if got, want := logJSON(t, res.Log.Messages()), logJSON(t, wantLogs[2]); !slices.Equal(got, want) {
		t.Errorf("log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	journalHolds(t, st, "chat", res.Log)
}

func TestContinueErrors(t *testing.T) { forEachStore(t, testContinueErrors) }

// Continue of a run it cannot go on from fails before it calls the
// model, and leaves the run as it was.
func testContinueErrors(t *testing.T, st runStore) {
	ctx := t.Context()
	if _, err := agent.Continue(ctx, agent.Config{}, "x"); !errors.Is(err, agent.ErrNoStore) || !errors.Is(err, agent.ErrRefused) {
		t.Errorf("no store: %v", err)
	}
	if _, err := agent.Continue(ctx, agent.Config{Store: st}, "x"); !errors.Is(err, store.ErrNotFound) || !errors.Is(err, agent.ErrRefused) {
		t.Errorf("unknown run: %v", err)
	}
	reg := agent.NewRegistry()
	started, release := blocking(reg)
	cfg := agent.Config{Registry: reg, Store: st}
	// A plan run.
	cfg.RunID = "plan"
	go func() { release <- struct{}{} }()
	if _, err := agent.ExecutePlan(ctx, cfg, planOf(t, `[{"_tool":"slow","_outputPath":"†state.s"}]`), planCtx(t, `[{"type":"tool","tool":"slow"}]`)); err != nil {
		t.Fatal(err)
	}
	<-started
	// A failed run: the limit of one step.
	cfg.RunID, cfg.MaxSteps = "failed", 1
	cfg.Provider = scripted.Solutions(`{"calls":[{"_tool":"slow","_outputPath":"†state.s"}],"output":null}`)
	go func() { <-started; release <- struct{}{} }()
	if _, err := agent.Run(ctx, cfg, chatSchema, ctxOf(t, `[{"type":"tool","tool":"slow"},{"type":"text","text":"go"}]`)); !errors.Is(err, agent.ErrMaxSteps) {
		t.Fatalf("failed run: %v", err)
	}
	// A run held by the process running it.
	cfg.RunID, cfg.MaxSteps = "held", 0
	cfg.Provider = scripted.Solutions(`{"calls":[{"_tool":"slow","_outputPath":"†state.s"}],"output":null}`, `{"calls":[],"output":{}}`)
	done := make(chan error, 1)
	go func() {
		_, err := agent.Run(context.Background(), cfg, chatSchema, ctxOf(t, `[{"type":"tool","tool":"slow"},{"type":"text","text":"go"}]`))
		done <- err
	}()
	<-started
	for _, tt := range []struct {
		id   string
		want error
	}{
		{"plan", agent.ErrNotLoop},
		{"failed", agent.ErrUnfinished},
		{"held", store.ErrLeased},
	} {
		t.Run(tt.id, func(t *testing.T) {
			before, err := st.Load(ctx, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			entries := len(journal(t, st, tt.id))
			p := scripted.Solutions(`{"calls":[],"output":{}}`)
			_, err = agent.Continue(ctx, agent.Config{Provider: p, Registry: reg, Store: st}, tt.id, message.Text("more"))
			if !errors.Is(err, tt.want) || !errors.Is(err, agent.ErrRefused) || !strings.Contains(err.Error(), tt.id) {
				t.Errorf("continue: %v, want %v and agent.ErrRefused", err, tt.want)
			}
			if len(p.Requests()) != 0 {
				t.Error("it called the model")
			}
			after, _ := st.Load(ctx, tt.id)
			if after.Status != before.Status || after.Lease.Owner != before.Lease.Owner {
				t.Errorf("the run before %+v, after %+v", before, after)
			}
			// The held run goes on writing its own journal meanwhile: what
			// Continue must not have written there is its message.
			es := journal(t, st, tt.id)
			if tt.id != "held" && len(es) != entries {
				t.Errorf("the journal had %d entries, now %d", entries, len(es))
			}
			for _, e := range es {
				if bytes.Contains(e.Data, []byte(`"more"`)) {
					t.Errorf("the message was journaled: entry %d %s", e.Seq, e.Data)
				}
			}
		})
	}
	if le, ok := errors.AsType[*store.LeaseError](func() error {
		_, err := agent.Continue(ctx, cfg, "held")
		return err
	}()); !ok || le.Held.Owner == "" {
		t.Errorf("continue of a held run: no *store.LeaseError naming its owner")
	}
	release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A message no handler renders, refused before it is journaled: the
	// turn's first request would fail on it, and so would every resume.
	before, err := st.Load(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	entries := len(journal(t, st, "held"))
	p := scripted.Solutions(`{"calls":[],"output":{}}`)
	_, err = agent.Continue(ctx, agent.Config{Provider: p, Registry: reg, Store: st}, "held", message.Text("more"), message.Message{Type: "nope"})
	if me, ok := errors.AsType[*agent.MessageError](err); !errors.Is(err, agent.ErrUnknownType) || !errors.Is(err, agent.ErrRefused) || !ok || me.Type != "nope" {
		t.Errorf("continue with a message of an unknown type: %v", err)
	}
	after, _ := st.Load(ctx, "held")
	if len(p.Requests()) != 0 || after.Status != store.Done || !after.Updated.Equal(before.Updated) || len(journal(t, st, "held")) != entries {
		t.Errorf("%d requests; the run before %+v, after %+v", len(p.Requests()), before, after)
	}
}

// journalHolds checks that the journal of run id holds log, byte for
// byte as rendered (sameLog compares json.Marshal's escaped form).
func journalHolds(t *testing.T, st store.Store, id string, log *message.Log) {
	t.Helper()
	var want []string
	for _, m := range log.Messages() {
		b, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, string(b))
	}
	if got := journalLog(t, journal(t, st, id)); !slices.Equal(got, want) {
		t.Errorf("the journal's log differs from the run's:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestContinueRefused(t *testing.T) { forEachStore(t, testContinueRefused) }

// errPicky is what the handler of "picky" messages says of them.
var errPicky = errors.New("picky: not this one")

// A turn whose messages its first request could not be prepared with is
// refused before anything is journaled: the error names the message, the
// model is not called, and the run is as it was, so a turn with good
// messages goes on from it, as if the refused one had never been tried.
func testContinueRefused(t *testing.T, st runStore) {
	wantReqs, wantLogs, _ := freshTurns(t, 2)
	cfg := chatConfig(st)
	cfg.Provider, cfg.RunID = scripted.New(chatTurn(1)...), "chat"
	if _, err := agent.Run(t.Context(), cfg, chatSchema, append(cacheContext(), chatSaid(1))); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	reg, _ := cacheAgent(1)
	reg.HandleFunc("picky", func(context.Context, *agent.Build, *message.Message) error { return errPicky })
	before, err := st.Load(ctx, "chat")
	if err != nil {
		t.Fatal(err)
	}
	entries := journal(t, st, "chat")
	for _, tt := range []struct {
		name string
		bad  message.Message
		want error
		text string // a part of the error's text
	}{
		{"a type no handler renders", message.Message{Type: "nope"}, agent.ErrUnknownType, `the turn's message 2: message 11 (nope): no handler for message type "nope"`},
		{"a tool the registry lacks", message.Message{Type: message.TypeTool, Tool: json.RawMessage(`"ghost"`)}, agent.ErrUnknownTool, `the turn's message 2: message 11 (tool): unknown tool "ghost"`},
		{"a message a handler of the user's refuses", message.Message{Type: "picky"}, errPicky, `the turn's message 2: message 11 (picky): picky: not this one`},
		{"a preset no registry holds", message.Message{Type: message.TypePreset, Extra: json.RawMessage(`{"preset":"ghost"}`)}, agent.ErrUnknownPreset, `the turn's message 2: message 11 (preset): unknown preset "ghost"`},
		// The composed schema names the tool, not the message.
		{"a tool whose schema does not compile", message.Message{Type: message.TypeTool, Tool: json.RawMessage(`{"bad":{"type":"object","properties":{"x":{"type":"nonsense"}}}}`)},
			nil, `agent: continue chat: tool "bad": schema: invalid schema: at /properties/x/type`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := scripted.New(chatTurn(2)...)
			_, err := agent.Continue(ctx, agent.Config{Provider: p, Registry: reg, Clock: fixed, Store: st}, "chat", chatSaid(2), tt.bad)
			if _, ok := errors.AsType[*agent.MessageError](err); err == nil || tt.want != nil && (!ok || !errors.Is(err, tt.want)) || !errors.Is(err, agent.ErrRefused) || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("continue: %v, want an agent.ErrRefused *MessageError wrapping %v, saying %q", err, tt.want, tt.text)
			}
			if len(p.Requests()) != 0 {
				t.Error("it called the model")
			}
			after, err := st.Load(ctx, "chat")
			if err != nil || after.Status != before.Status || !after.Updated.Equal(before.Updated) || after.Lease != before.Lease ||
				after.Usage != before.Usage || !bytes.Equal(after.Spec, before.Spec) {
				t.Errorf("the run before %+v, after %+v (%v)", before, after, err)
			}
			if got := journal(t, st, "chat"); len(got) != len(entries) {
				t.Errorf("the journal had %d entries, now %d", len(entries), len(got))
			}
		})
	}
	// Still the run it was: a resume returns its first turn, and the next
	// turn is the one a run that never saw the refused messages takes.
	if res, err := agent.Resume(ctx, agent.Config{Store: st}, "chat"); err != nil || res.Log.Len() != len(wantLogs[0]) {
		t.Fatalf("resume after the refusals: %v", err)
	}
	p := scripted.New(chatTurn(2)...)
	res, err := agent.Continue(ctx, agent.Config{Provider: p, Registry: reg, Clock: fixed, Store: st}, "chat", chatSaid(2))
	if err != nil {
		t.Fatal(err)
	}
	sameTurn(t, 2, p.Requests(), wantReqs[1])
	if got, want := logJSON(t, res.Log.Messages()), logJSON(t, wantLogs[1]); !slices.Equal(got, want) {
		t.Errorf("log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	journalHolds(t, st, "chat", res.Log)
}

// Under RenderSnapshot too, a continued turn's first request, prepared
// before the turn is journaled, is the one sent: the turn sends the
// requests of a new run over the conversation.
func TestContinueSnapshot(t *testing.T) {
	wantReqs, wantLogs, _ := freshTurnsRendered(t, 2, agent.RenderSnapshot)
	st := store.NewMemory()
	cfg := chatConfig(st)
	cfg.Provider, cfg.RunID, cfg.Rendering = scripted.New(chatTurn(1)...), "chat", agent.RenderSnapshot
	if _, err := agent.Run(t.Context(), cfg, chatSchema, append(cacheContext(), chatSaid(1))); err != nil {
		t.Fatal(err)
	}
	reg, _ := cacheAgent(1)
	p := scripted.New(chatTurn(2)...)
	res, err := agent.Continue(t.Context(), agent.Config{Provider: p, Registry: reg, Clock: fixed, Store: st}, "chat", chatSaid(2))
	if err != nil {
		t.Fatal(err)
	}
	sameTurn(t, 2, p.Requests(), wantReqs[1])
	if got, want := logJSON(t, res.Log.Messages()), logJSON(t, wantLogs[1]); !slices.Equal(got, want) {
		t.Errorf("log\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestContinueMissingActivity continues a run in a program that lacks the
// code of the run's tool: the tool would be latent, and the model would
// make up the results the code computed, so the turn fails, naming the
// activity, and leaves the run as it was; with the code it goes on.
func TestContinueMissingActivity(t *testing.T) {
	lookup := func(reg *agent.Registry) {
		if err := agent.Func(reg, "lookup", "Looks an order up", func(_ context.Context, p struct {
			Order string `json:"order"`
		}) (string, error) {
			return "order " + p.Order + ": 25 EUR", nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	reg := agent.NewRegistry()
	lookup(reg)
	offer, err := reg.Offer() // the definition travels in the journal
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	cfg := agent.Config{Provider: scripted.Solutions(`{"calls":[],"output":"hello"}`), Registry: reg, Store: st, RunID: "c"}
	if _, err := agent.Run(t.Context(), cfg, json.RawMessage(`{"type":"string"}`), []message.Message{offer, message.Text("hi")}); err != nil {
		t.Fatal(err)
	}
	entries := len(journal(t, st, "c"))
	p := scripted.Solutions(`{"calls":[{"_tool":"lookup","order":"7","_outputPath":"†state.o"}],"output":null}`, `{"calls":[],"output":"25 EUR"}`)
	_, err = agent.Continue(t.Context(), agent.Config{Provider: p, Registry: agent.NewRegistry(), Store: st}, "c", message.Text("How much was order 7?"))
	if !errors.Is(err, agent.ErrMissingActivity) || !errors.Is(err, agent.ErrRefused) || !strings.HasSuffix(err.Error(), ": lookup") {
		t.Fatalf("continue without the tool's code: %v", err)
	}
	if run, _ := st.Load(t.Context(), "c"); run.Status != store.Done || run.Lease.Owner != "" || len(journal(t, st, "c")) != entries || len(p.Requests()) != 0 {
		t.Errorf("the run after a refused turn: %s, held by %q, %d new entries, %d requests", run.Status, run.Lease.Owner, len(journal(t, st, "c"))-entries, len(p.Requests()))
	}
	reg = agent.NewRegistry()
	lookup(reg)
	res, err := agent.Continue(t.Context(), agent.Config{Provider: p, Registry: reg, Store: st}, "c", message.Text("How much was order 7?"))
	if err != nil {
		t.Fatal(err)
	}
	if got := stateOf(t, res.Log); got != `{"o":"order 7: 25 EUR"}` {
		t.Errorf("state %s", got)
	}
}

// TestContinuePresets: a preset given to Continue expands where it
// stands, in a run whose log holds presets already (expanded when they
// were journaled, and not again); a preset inside it that no registry
// holds is refused, naming the turn's message it came in.
func TestContinuePresets(t *testing.T) {
	reg := agent.NewRegistry()
	reg.Preset("Terse", agent.Preset{Messages: []message.Message{message.Text("Answer in one word.")}})
	reg.Preset("Broken", agent.Preset{Messages: []message.Message{{Type: message.TypePreset, Extra: json.RawMessage(`{"preset":"ghost"}`)}}})
	preset := func(name string) message.Message {
		return message.Message{Type: message.TypePreset, Extra: json.RawMessage(`{"preset":"` + name + `"}`)}
	}
	st := store.NewMemory()
	cfg := agent.Config{Provider: scripted.Solutions(`{"output":"Paris"}`), Registry: reg, Store: st, RunID: "p"}
	if _, err := agent.Run(t.Context(), cfg, json.RawMessage(`{"type":"string"}`), []message.Message{preset("Terse"), message.Text("France?")}); err != nil {
		t.Fatal(err)
	}
	_, err := agent.Continue(t.Context(), agent.Config{Provider: scripted.Solutions(), Registry: reg, Store: st}, "p", message.Text("Spain?"), preset("Broken"))
	if !errors.Is(err, agent.ErrUnknownPreset) || !errors.Is(err, agent.ErrRefused) || !strings.Contains(err.Error(), "the turn's message 2: ") {
		t.Fatalf("a preset naming an unknown one: %v", err)
	}
	res, err := agent.Continue(t.Context(), agent.Config{Provider: scripted.Solutions(`{"output":"Madrid"}`), Registry: reg, Store: st}, "p", preset("Terse"), message.Text("Spain?"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range res.Log.Messages() {
		got = append(got, string(m.Type)+":"+m.Text)
	}
	want := []string{"preset:", "text:Answer in one word.", "text:France?", "text:\"Paris\"", "preset:", "text:Answer in one word.", "text:Spain?"}
	if !slices.Equal(got, want) {
		t.Errorf("log %q, want %q", got, want)
	}
	journalHolds(t, st, "p", res.Log)
}
