package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	neturl "net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

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
// sqlite:PATH, or a plain path to a SQLite file. A SQLite file that does
// not exist is created when create is set (acts run), and an error
// otherwise: a command that reads runs from a misspelt path says so
// rather than list none and leave an empty database behind.
func openStore(ctx context.Context, url string, create bool) (runStore, error) {
	st, err := openStoreAt(ctx, url, create)
	if err != nil {
		return nil, err
	}
	return namedStore{st, storeName(url)}, nil
}

// namedStore says which store a run was not found in: a store picked by
// ACTS_STORE or the working directory is not always the one meant.
type namedStore struct {
	runStore
	name string
}

func (s namedStore) Load(ctx context.Context, id string) (store.Run, error) {
	run, err := s.runStore.Load(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("%w in %s", err, s.name)
	}
	return run, err
}

// storeName is how errors name the store of --store url: a PostgreSQL
// URL without its password.
func storeName(url string) string {
	if u, err := neturl.Parse(url); err == nil && u.User != nil {
		return u.Redacted()
	}
	return url
}

func openStoreAt(ctx context.Context, url string, create bool) (runStore, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return postgres.Open(ctx, url)
	case url == "memory:" && !create:
		// A fresh memory store would list no runs and find none.
		return nil, fmt.Errorf("%w: --store memory: keeps no run after the command that made it: name the store the run was made in", errUsage)
	case url == "memory:":
		return memoryStore{store.NewMemory()}, nil
	}
	if scheme, _, ok := strings.Cut(url, "://"); ok && scheme != "" && !strings.ContainsAny(scheme, "/:") {
		return nil, fmt.Errorf("%w: --store %q: unknown scheme %q: want a SQLite file, sqlite:PATH, memory: or a postgres:// URL", errUsage, url, scheme)
	}
	path := strings.TrimPrefix(url, "sqlite:")
	if _, err := os.Stat(path); !create && errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store %s does not exist (--store, or ACTS_STORE, names a SQLite file)", path)
	}
	return sqlite.Open(ctx, path)
}

type memoryStore struct{ *store.Memory }

func (memoryStore) Close() error { return nil }

// storeFlag registers --store.
func storeFlag(fs *flag.FlagSet) *string {
	return fs.String("store", defaultStore(), "where runs are kept: a SQLite file, memory:, or a postgres:// `URL`; ACTS_STORE sets the default")
}

var runsCommand = &command{
	name:     "runs",
	synopsis: []string{"runs [flags]"},
	summary:  "list the runs of a store",
	doc: `
Lists the runs of a store, most recently created first: id, kind (plan
or loop), status (running, done, failed, interrupted), model, tokens used,
when it last changed and the Idea it came from. --json prints one JSON
object per run.`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		storeURL := storeFlag(fs)
		asJSON := fs.Bool("json", false, "print JSON lines, one run per line")
		return func(ctx context.Context, env *Env, pos []string) error {
			if len(pos) != 0 {
				return fmt.Errorf("%w: runs takes no arguments", errUsage)
			}
			return listRuns(ctx, env.Stdout, *storeURL, *asJSON)
		}
	},
}

// listRuns lists runs: acts runs.
func listRuns(ctx context.Context, w io.Writer, storeURL string, asJSON bool) error {
	st, err := openStore(ctx, storeURL, false)
	if err != nil {
		return err
	}
	defer st.Close()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "RUN\tKIND\tSTATUS\tMODEL\tTOKENS\tUPDATED\tIDEA")
	}
	var errs []error // the runs it could not read: the others are listed
	for r, err := range st.Runs(ctx) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if asJSON {
			b, err := marshal(runJSON(r), "")
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%s\n", b)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", escapeLine(r.ID), escapeLine(r.Kind), escapeLine(string(r.Status)), dash(r.Model), r.Usage.Total(),
			r.Updated.Local().Format(time.DateTime), dash(r.Idea))
	}
	return errors.Join(append([]error{tw.Flush()}, errs...)...)
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

// dash is s escaped for one line, or "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return escapeLine(s)
}

var forkCommand = &command{
	name:     "fork",
	synopsis: []string{"fork RUN --at N [flags]"},
	summary:  "copy a run up to a message into a new run",
	doc: `
Copies a run's journal up to its message N (as acts log numbers them) into
a new run, which "acts resume NEW" continues: what came after N runs again,
as it now would. The source run is left as it was. Prints the new run's id
(--json: {"run", "parent", "at"}).`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		storeURL := storeFlag(fs)
		at := fs.Int("at", 0, "keep messages 0 to `N` (as acts log numbers them) in the new run; required")
		id := fs.String("id", "", "the new run's `ID` (default: a new one)")
		asJSON := fs.Bool("json", false, `print one JSON object: {"run": NEW, "parent": RUN, "at": N}`)
		return func(ctx context.Context, env *Env, pos []string) error {
			if len(pos) != 1 || !isSet(fs, "at") {
				return fmt.Errorf("%w: fork takes RUN and --at N", errUsage)
			}
			if *at < 0 {
				return fmt.Errorf("%w: --at must be 0 or more, got %d", errUsage, *at)
			}
			return fork(ctx, env, *storeURL, pos[0], *at, *id, *asJSON)
		}
	},
}

// fork copies a run up to a message into a new run: acts fork RUN --at N.
func fork(ctx context.Context, env *Env, storeURL, src string, at int, id string, asJSON bool) error {
	w := env.Stdout
	st, err := openStore(ctx, storeURL, false)
	if err != nil {
		return err
	}
	defer st.Close()
	if id == "" {
		id = platform.NewID(ctx)
	}
	r, err := store.Fork(ctx, st, st, src, at, id, platform.Now(ctx).UTC())
	if err != nil {
		return fmt.Errorf("fork %s: %w", src, err)
	}
	if asJSON {
		b, err := json.Marshal(struct {
			Run    string `json:"run"`
			Parent string `json:"parent"`
			At     int    `json:"at"`
		}{r.ID, src, at})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	_, err = fmt.Fprintf(w, "run %s: forked from %s at message %d; continue it with: %s resume %s --store %s\n", escapeLine(r.ID), escapeLine(src), at, env.name(), escapeLine(r.ID), escapeLine(storeName(storeURL)))
	return err
}

// pricesFlag registers --prices.
func pricesFlag(fs *flag.FlagSet) *string {
	return fs.String("prices", os.Getenv("ACTS_PRICES"), "the price list `FILE` (JSON: model name or prefix* to US dollars per million tokens) to show costs with; with none, no cost is shown; ACTS_PRICES sets the default")
}

var logCommand = &command{
	name:     "log",
	synopsis: []string{"log RUN [flags]"},
	summary:  "print a run's trace",
	doc: `
Prints a run's trace: its messages numbered (the numbers fork takes), each
step of an agent loop, each call with its references resolved against the
log as it was when the call started, how each call ended, the answer, and
the token usage with the prompt cache's hit rate. With a price list
(--prices or ACTS_PRICES) it adds the cost. --json prints the journal as
JSON lines: first {"run": ..., "cost": ...} (cost only with a price list
that prices the run's model), then one line per entry.`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		storeURL := storeFlag(fs)
		priceFile := pricesFlag(fs)
		asJSON := fs.Bool("json", false, "print the journal as JSON lines")
		return func(ctx context.Context, env *Env, pos []string) error {
			if len(pos) != 1 {
				return fmt.Errorf("%w: log takes RUN", errUsage)
			}
			pl, err := loadPrices(*priceFile)
			if err != nil {
				return err
			}
			return printLog(ctx, env.Stdout, *storeURL, pos[0], pl, *asJSON)
		}
	},
}

// printLog prints a run's trace: acts log RUN.
func printLog(ctx context.Context, w io.Writer, storeURL, id string, pl *prices, asJSON bool) error {
	st, err := openStore(ctx, storeURL, false)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := st.Load(ctx, id)
	if err != nil {
		return err // the store's error names the run
	}
	if asJSON {
		return journalJSON(ctx, w, st, run, pl)
	}
	return trace(ctx, w, st, run, pl)
}

func journalJSON(ctx context.Context, w io.Writer, st runStore, run store.Run, pl *prices) error {
	head := struct {
		Run  any      `json:"run"`
		Cost *float64 `json:"cost,omitempty"`
	}{Run: runJSON(run)}
	if pl != nil {
		u, err := runUsage(ctx, st, run)
		if err != nil {
			return err
		}
		if c, ok := pl.cost(run.Model, u); ok {
			head.Cost = &c
		}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(head); err != nil {
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
			return fmt.Errorf("run %s: entry %d: %w", run.ID, e.Seq, err)
		}
	}
	return nil
}

// trace prints a journal for people: messages numbered as in the log,
// each call with its references resolved against the log as it was when
// the call started, how it ended, then usage, and cost with a price list.
// What runs, users and models wrote is escaped.
func trace(ctx context.Context, w io.Writer, st runStore, run store.Run, pl *prices) error {
	bw := &errWriter{w: w}
	bw.printf("run %s  %s  %s", escapeLine(run.ID), escapeLine(run.Kind), run.Status)
	if run.Idea != "" {
		bw.printf("  idea %s", escapeLine(run.Idea))
	}
	if run.Model != "" {
		bw.printf("  model %s", escapeLine(run.Model))
	}
	if run.Parent != "" {
		bw.printf("  forked from %s", escapeLine(run.Parent))
	}
	bw.printf("\n")
	if run.Error != "" {
		bw.printf("error: %s\n", escapeLine(run.Error))
	}
	log, err := message.NewLog()
	if err != nil {
		return err
	}
	n, failed, calls, step := 0, 0, 0, ""
	var queued []store.Entry
	ran := map[string]bool{} // calls started or settled
	var answer json.RawMessage
	var usage store.UsageTotal
	for e, err := range st.Entries(ctx, run.ID, 0) {
		if err != nil {
			return err
		}
		switch e.Type {
		case store.EntryMessage:
			var m message.Message
			if err := json.Unmarshal(e.Data, &m); err != nil {
				return fmt.Errorf("run %s: entry %d: %w", run.ID, e.Seq, err)
			}
			if err := log.Append(m); err != nil {
				return fmt.Errorf("run %s: entry %d: %w", run.ID, e.Seq, err)
			}
			bw.printf("%5d  %s\n", n, describe(&m))
			n++
		case store.EntryQueued:
			// Said only of a call that never starts: it waited for data
			// when the run stopped, or never became ready.
			queued = append(queued, e)
		case store.EntryStarted:
			calls++
			// A loop's call ids are step.position: mark each new step.
			if st, _, ok := strings.Cut(e.Call, "."); ok && st != step {
				step = st
				bw.printf("  ── step %s\n", escapeLine(step))
			}
			bw.printf("       call %s started: %s\n", escapeLine(e.Call), describeCall(log, e.Data))
			ran[e.Call] = true
		case store.EntrySettled:
			ran[e.Call] = true
			if len(e.Data) == 0 {
				bw.printf("       call %s done\n", escapeLine(e.Call))
				continue
			}
			failed++
			var m message.Message
			if json.Unmarshal(e.Data, &m) == nil {
				bw.printf("       call %s failed: %s\n", escapeLine(e.Call), escapeLine(m.Error))
			}
		case store.EntrySolution:
			bw.printf("       step %s: solution %s\n", escapeLine(e.Call), clip(string(e.Data), 200))
		case store.EntryUsage:
			if err := usage.Add(e); err != nil {
				return fmt.Errorf("run %s: %w", run.ID, err)
			}
		case store.EntryStatus:
			var st struct{ Status, Error string }
			if json.Unmarshal(e.Data, &st) == nil {
				bw.printf("       stopped: %s: %s\n", escapeLine(st.Status), clip(st.Error, 300))
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
	for _, e := range queued {
		if !ran[e.Call] {
			bw.printf("       call %s never started: %s\n", escapeLine(e.Call), describeCall(log, e.Data))
		}
	}
	bw.printf("%s, %s started, %d failed\n", count(n, "message"), count(calls, "call"), failed)
	if answer != nil {
		bw.printf("answer: %s\n", indentJSON(answer))
	}
	u := usage.Of(run)
	long := ""
	if u.CacheWriteLong > 0 {
		long = fmt.Sprintf(", %d of them to last an hour", u.CacheWriteLong)
	}
	bw.printf("usage: %d input tokens, %d read from the cache and %d written to it%s (hit rate %.0f%%), %d output tokens (%d thinking)",
		u.Input, u.CacheRead, u.CacheWrite, long, 100*u.CacheHitRate(), u.Output, u.Thinking)
	if c := pl.costText(run.Model, u); c != "" {
		bw.printf("; %s", escapeLine(c))
	}
	switch n := usage.Lost(); {
	case n == 1:
		bw.printf("; the usage of 1 request was lost (the provider did not say it: a stream cut after the answer, or a server that does not report usage), so these totals are short")
	case n > 1:
		bw.printf("; the usage of %d requests was lost (the provider did not say it: streams cut after the answer, or a server that does not report usage), so these totals are short", n)
	}
	bw.printf("\n")
	return bw.err
}

// describe is a message on one line, escaped.
func describe(m *message.Message) string {
	inst := ""
	if m.Instance != "" {
		inst = "[" + escapeLine(m.Instance) + "]"
	}
	switch m.Type {
	case message.TypeText:
		role := string(m.Role)
		if role == "" {
			role = "user"
		}
		return fmt.Sprintf("%s: %s", escapeLine(role), clip(m.Text, 120))
	case message.TypeData:
		s := escapeLine(m.Kind) + inst
		if m.OutputPath != "" {
			s += " ← " + escapeLine(m.OutputPath)
		}
		if m.Data == nil && m.Schema != nil {
			// A declaration, an Idea's of its input say: no data, only
			// the schema that data is to fit.
			return s + " schema " + clip(string(m.Schema), 120)
		}
		return s + " " + clip(string(m.Data), 120)
	case message.TypeTool:
		return "tools " + clip(string(m.Tool), 120)
	case message.TypePlan:
		// The tools it calls: a plan that runs shows its calls below it,
		// one that does not (a lazy run's answer) only here.
		var calls []struct {
			Tool string `json:"_tool"`
		}
		_ = json.Unmarshal(m.Plan, &calls)
		s := "plan of " + count(len(calls), "call")
		for i, c := range calls {
			switch {
			case i == 0:
				s += ": "
			case i == 5:
				return s + fmt.Sprintf(" and %d more", len(calls)-5)
			default:
				s += ", "
			}
			s += escapeLine(c.Tool)
		}
		return s
	case message.TypeError:
		return "error: " + clip(m.Error, 200)
	case message.TypeCompaction:
		return "compaction: the model sees what comes before as a snapshot (the log keeps it all)"
	}
	return escapeLine(string(m.Type))
}

// describeCall is a call with its references resolved where they
// resolve, escaped.
func describeCall(log *message.Log, raw json.RawMessage) string {
	meta, err := message.ParseCallMeta(raw)
	if err != nil {
		return clip(string(raw), 200)
	}
	var src ref.Source = log
	name := escapeLine(meta.Tool)
	if meta.Instance != "" {
		src = log.Instance(meta.Instance)
		name += "[" + escapeLine(meta.Instance) + "]"
	}
	out := ""
	if meta.OutputPath != "" {
		out = " → " + escapeLine(meta.OutputPath)
	}
	params := string(raw)
	if sub, err := ref.Substitute(src, raw); err == nil {
		params = string(sub)
	}
	return fmt.Sprintf("%s %s%s", name, clip(params, 200), out)
}

// clip puts s on one line of at most n characters, escaped: runs of
// white space become one space.
func clip(s string, n int) string {
	s = escapeLine(strings.Join(strings.Fields(s), " "))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
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

// runUsage is the usage of a run (see store.UsageTotal).
func runUsage(ctx context.Context, st runStore, run store.Run) (provider.Usage, error) {
	var u store.UsageTotal
	for e, err := range st.Entries(ctx, run.ID, 0) {
		if err != nil {
			return provider.Usage{}, err
		}
		if err := u.Add(e); err != nil {
			return provider.Usage{}, fmt.Errorf("run %s: %w", run.ID, err)
		}
	}
	return u.Of(run), nil
}

// count is n things, in the singular for one.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
