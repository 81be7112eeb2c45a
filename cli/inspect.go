package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/provider"
	"github.com/augceo/agent/ref"
	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/postgres"
	"github.com/augceo/agent/store/sqlite"
)

// runStore is a store the CLI can write, read and close.
type runStore interface {
	store.Store
	store.Catalog
	Close() error
}

// defaultStore is ACTS_STORE, else acts.db in the working directory.
func defaultStore() string {
	if s := os.Getenv("ACTS_STORE"); s != "" {
		return s
	}
	return "acts.db"
}

// openStore opens a store by URL: postgres:// or postgresql://, memory:,
// sqlite:PATH, or a plain path to a SQLite file.
func openStore(ctx context.Context, url string) (runStore, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return postgres.Open(ctx, url)
	case url == "memory:":
		return memoryStore{store.NewMemory()}, nil
	default:
		return sqlite.Open(ctx, strings.TrimPrefix(url, "sqlite:"))
	}
}

type memoryStore struct{ *store.Memory }

func (memoryStore) Close() error { return nil }

// runsCmd lists runs: acts runs.
func runsCmd(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("runs", flag.ContinueOnError)
	storeURL := fs.String("store", defaultStore(), "where runs are kept")
	asJSON := fs.Bool("json", false, "print JSON lines")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fmt.Errorf("%w: runs takes no arguments", errUsage)
	}
	st, err := openStore(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer st.Close()
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "RUN\tKIND\tSTATUS\tMODEL\tTOKENS\tUPDATED\tIDEA")
	}
	for r, err := range st.Runs(ctx) {
		if err != nil {
			return err
		}
		if *asJSON {
			b, err := json.Marshal(runJSON(r))
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "%s\n", b)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.Kind, r.Status, dash(r.Model), r.Usage.Total(),
			r.Updated.Local().Format(time.DateTime), dash(r.Idea))
	}
	return tw.Flush()
}

// runJSON is a run as scripts see it.
func runJSON(r store.Run) any {
	return struct {
		ID       string         `json:"id"`
		Kind     string         `json:"kind"`
		Status   store.Status   `json:"status"`
		Error    string         `json:"error,omitempty"`
		Idea     string         `json:"idea,omitempty"`
		Model    string         `json:"model,omitempty"`
		Usage    provider.Usage `json:"usage"`
		Parent   string         `json:"parent,omitempty"`
		ForkedAt int64          `json:"forkedAt,omitempty"`
		Created  time.Time      `json:"created"`
		Updated  time.Time      `json:"updated"`
	}{r.ID, r.Kind, r.Status, r.Error, r.Idea, r.Model, r.Usage, r.Parent, r.ForkedAt, r.Created, r.Updated}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// forkCmd copies a run up to a message into a new run: acts fork RUN --at N.
func forkCmd(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("fork", flag.ContinueOnError)
	storeURL := fs.String("store", defaultStore(), "where runs are kept")
	at := fs.Int("at", -1, "the last message (as acts log numbers them) the new run keeps")
	id := fs.String("id", "", "the new run's id (default: a new one)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *at < 0 {
		return fmt.Errorf("%w: fork takes RUN and --at N", errUsage)
	}
	st, err := openStore(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer st.Close()
	newID := *id
	if newID == "" {
		newID = platform.NewID(ctx)
	}
	r, err := store.Fork(ctx, st, st, pos[0], *at, newID, platform.Now(ctx).UTC())
	if err != nil {
		return fmt.Errorf("fork %s: %w", pos[0], err)
	}
	_, err = fmt.Fprintf(env.Stdout, "run %s: forked from %s at message %d; continue it with: acts resume %s\n", r.ID, pos[0], *at, r.ID)
	return err
}

// logCmd prints a run's trace: acts log RUN.
func logCmd(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("log", flag.ContinueOnError)
	storeURL := fs.String("store", defaultStore(), "where runs are kept")
	asJSON := fs.Bool("json", false, "print the journal as JSON lines")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: log takes RUN", errUsage)
	}
	st, err := openStore(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := st.Load(ctx, pos[0])
	if err != nil {
		return fmt.Errorf("run %s: %w", pos[0], err)
	}
	if *asJSON {
		return journalJSON(ctx, env.Stdout, st, run)
	}
	return trace(ctx, env.Stdout, st, run)
}

func journalJSON(ctx context.Context, w io.Writer, st runStore, run store.Run) error {
	enc := json.NewEncoder(w)
	if err := enc.Encode(struct {
		Run any `json:"run"`
	}{runJSON(run)}); err != nil {
		return err
	}
	for e, err := range st.Entries(ctx, run.ID, 0) {
		if err != nil {
			return err
		}
		if err := enc.Encode(struct {
			Seq  int64           `json:"seq"`
			Type store.EntryType `json:"type"`
			Call string          `json:"call,omitempty"`
			Data json.RawMessage `json:"data,omitempty"`
			Time time.Time       `json:"time"`
		}{e.Seq, e.Type, e.Call, e.Data, e.Time}); err != nil {
			return err
		}
	}
	return nil
}

// trace prints a journal for people: messages numbered as in the log,
// each call with its references resolved against the log as it was when
// the call started, how it ended, then usage and cost.
func trace(ctx context.Context, w io.Writer, st runStore, run store.Run) error {
	bw := &errWriter{w: w}
	bw.printf("run %s  %s  %s", run.ID, run.Kind, run.Status)
	if run.Idea != "" {
		bw.printf("  idea %s", run.Idea)
	}
	if run.Model != "" {
		bw.printf("  model %s", run.Model)
	}
	if run.Parent != "" {
		bw.printf("  forked from %s", run.Parent)
	}
	bw.printf("\n")
	if run.Error != "" {
		bw.printf("error: %s\n", run.Error)
	}
	log, err := message.NewLog()
	if err != nil {
		return err
	}
	n, failed, calls, step := 0, 0, 0, ""
	var answer json.RawMessage
	var usage provider.Usage
	journaled := false
	for e, err := range st.Entries(ctx, run.ID, 0) {
		if err != nil {
			return err
		}
		switch e.Type {
		case store.EntryMessage:
			var m message.Message
			if err := json.Unmarshal(e.Data, &m); err != nil {
				return fmt.Errorf("entry %d: %w", e.Seq, err)
			}
			if err := log.Append(m); err != nil {
				return fmt.Errorf("entry %d: %w", e.Seq, err)
			}
			bw.printf("%5d  %s\n", n, describe(&m))
			n++
		case store.EntryStarted:
			calls++
			// A loop's call ids are step.position: mark each new step.
			if st, _, ok := strings.Cut(e.Call, "."); ok && st != step {
				step = st
				bw.printf("  ── step %s\n", step)
			}
			bw.printf("       call %s started: %s\n", e.Call, describeCall(log, e.Data))
		case store.EntrySettled:
			if len(e.Data) == 0 {
				bw.printf("       call %s done\n", e.Call)
				continue
			}
			failed++
			var m message.Message
			if json.Unmarshal(e.Data, &m) == nil {
				bw.printf("       call %s failed: %s\n", e.Call, m.Error)
			}
		case store.EntrySolution:
			bw.printf("       step %s: solution %s\n", e.Call, clip(string(e.Data), 200))
		case store.EntryUsage:
			var u provider.Usage
			if json.Unmarshal(e.Data, &u) == nil {
				usage.Add(u)
				journaled = true
			}
		case store.EntryStatus:
			var st struct{ Status, Error string }
			if json.Unmarshal(e.Data, &st) == nil {
				bw.printf("       stopped: %s: %s\n", st.Status, clip(st.Error, 300))
			}
		case store.EntryEnd:
			bw.printf("       end\n")
			var end struct {
				Solution struct {
					Output json.RawMessage `json:"output"`
				} `json:"solution"`
			}
			if json.Unmarshal(e.Data, &end) == nil && len(end.Solution.Output) > 0 && string(end.Solution.Output) != "null" {
				answer = end.Solution.Output
			}
		}
	}
	bw.printf("%d messages, %d calls started, %d failed\n", n, calls, failed)
	if answer != nil {
		bw.printf("answer: %s\n", indentJSON(answer))
	}
	u := run.Usage
	if journaled { // exact across failures and resumes
		u = usage
	}
	bw.printf("usage: %d input tokens, %d read from the cache and %d written to it (hit rate %.0f%%), %d output tokens (%d thinking)",
		u.Input, u.CacheRead, u.CacheWrite, 100*u.CacheHitRate(), u.Output, u.Thinking)
	if c, ok := cost(run.Model, u); ok {
		bw.printf("; cost $%.4f\n", c)
	} else if u.Total() > 0 {
		bw.printf("; cost unknown for model %q\n", run.Model)
	} else {
		bw.printf("; cost $0\n")
	}
	return bw.err
}

// describe is a message on one line.
func describe(m *message.Message) string {
	inst := ""
	if m.Instance != "" {
		inst = "[" + m.Instance + "]"
	}
	switch m.Type {
	case message.TypeText:
		role := string(m.Role)
		if role == "" {
			role = "user"
		}
		return fmt.Sprintf("%s: %s", role, clip(m.Text, 120))
	case message.TypeData:
		s := fmt.Sprintf("%s%s", m.Kind, inst)
		if m.OutputPath != "" {
			s += " ← " + m.OutputPath
		}
		return s + " " + clip(string(m.Data), 120)
	case message.TypeTool:
		return "tools " + clip(string(m.Tool), 120)
	case message.TypePlan:
		var calls []json.RawMessage
		_ = json.Unmarshal(m.Plan, &calls)
		return fmt.Sprintf("plan of %d calls", len(calls))
	case message.TypeError:
		return "error: " + clip(m.Error, 200)
	case message.TypeCompaction:
		return "compaction: the model sees what comes before as a snapshot (the log keeps it all)"
	}
	return string(m.Type)
}

// describeCall is a call with its references resolved where they resolve.
func describeCall(log *message.Log, raw json.RawMessage) string {
	meta, err := message.ParseCallMeta(raw)
	if err != nil {
		return clip(string(raw), 200)
	}
	var src ref.Source = log
	name := meta.Tool
	if meta.Instance != "" {
		src = log.Instance(meta.Instance)
		name += "[" + meta.Instance + "]"
	}
	out := ""
	if meta.OutputPath != "" {
		out = " → " + meta.OutputPath
	}
	params := string(raw)
	if sub, err := ref.Substitute(src, raw); err == nil {
		params = string(sub)
	}
	return fmt.Sprintf("%s %s%s", name, clip(params, 200), out)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// prices are list prices in US dollars per million input and output
// tokens, for the trace's cost line. They change; a model not listed has
// no cost shown.
var prices = map[string][2]float64{
	"gpt-5":             {1.25, 10},
	"gpt-5-mini":        {0.25, 2},
	"gpt-5-nano":        {0.05, 0.4},
	"gpt-4.1":           {2, 8},
	"gpt-4.1-mini":      {0.4, 1.6},
	"gpt-4o":            {2.5, 10},
	"gpt-4o-mini":       {0.15, 0.6},
	"claude-opus-4-1":   {15, 75},
	"claude-sonnet-4-5": {3, 15},
	"claude-haiku-4-5":  {1, 5},
	"gemini-2.5-pro":    {1.25, 10},
	"gemini-2.5-flash":  {0.3, 2.5},
}

// cost prices usage for a model named provider:model.
func cost(model string, u provider.Usage) (float64, bool) {
	name, m, ok := strings.Cut(model, ":")
	if !ok {
		m = name
	}
	if name == "ollama" {
		return 0, true
	}
	p, ok := prices[m]
	if !ok {
		return 0, false
	}
	return (float64(u.Input)*p[0] + float64(u.Output)*p[1]) / 1e6, true
}
