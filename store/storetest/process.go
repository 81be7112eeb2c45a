package storetest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/augceo/agent/store"
)

// The environment of a process RunProcesses starts: the database it
// opens, and its name, which it writes and acquires as.
const (
	dbEnv   = "STORETEST_PROCESS_DB"
	nameEnv = "STORETEST_PROCESS_NAME"
)

// processes is how many processes RunProcesses starts, and rounds how
// many runs they race for, each.
const (
	processes = 3
	rounds    = 20
)

// RunProcesses checks that processes sharing one database, as several
// runs and resumes of acts do, each see the others' writes atomically:
// racing to create a run, or to acquire one no one holds or whose lease
// expired, exactly one process wins; appending to one run, their entries
// are numbered one after the other.
//
// newDB returns a new, empty database, such as a file name or a URL, and
// open opens a store on it; each reports its own failures with t.Fatal
// and registers with t.Cleanup whatever closes or removes what it made.
// RunProcesses runs the test binary again as the processes, with a
// -test.run flag naming t's test, which must call RunProcesses in the
// same way: there it opens the database the test's own process made,
// without calling newDB, and races.
func RunProcesses(t *testing.T, newDB func(t *testing.T) string, open func(t *testing.T, db string) (store.Store, store.Catalog)) {
	t.Helper()
	if db := os.Getenv(dbEnv); db != "" {
		s, _ := open(t, db)
		racer(t, s, os.Getenv(nameEnv))
		return
	}
	db := newDB(t)
	s, c := open(t, db)
	for i := range rounds {
		run := sampleRun(fmt.Sprint("held-", i))
		if i%2 == 1 {
			run.Lease = store.Lease{Owner: "crashed", Expires: t0}
		}
		create(t, s, run)
	}
	create(t, s, sampleRun("shared"))

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	var procs []*process
	defer func() {
		cancel() // kills those still running
		for _, p := range procs {
			p.wait()
		}
	}()
	for k := range processes {
		p, err := start(ctx, t.Name(), db, fmt.Sprint("process-", k))
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	// Start them together, once each has opened the database.
	for _, p := range procs {
		select {
		case <-p.ready:
		case <-p.done:
			t.Fatalf("%s ended before it got ready: %v\n%s", p.name, p.wait(), p.log.Bytes())
		}
	}
	for _, p := range procs {
		io.WriteString(p.stdin, "go\n")
		p.stdin.Close()
	}
	for _, p := range procs {
		if err := p.wait(); err != nil {
			t.Errorf("%s: %v\n%s", p.name, err, p.log.Bytes())
		}
	}
	if t.Failed() {
		return
	}

	// Each process reports every race, as won or lost, and each race has
	// one winner, whose run, journal or lease the store holds.
	won := make(map[string][]string) // race → winners
	for _, p := range procs {
		if len(p.reports) != 2*rounds {
			t.Errorf("%s reported %d races, want %d: %q", p.name, len(p.reports), 2*rounds, p.reports)
		}
		for _, line := range p.reports {
			if race, ok := strings.CutSuffix(line, " won"); ok {
				won[race] = append(won[race], p.name)
			}
		}
	}
	for i := range rounds {
		id := fmt.Sprint("race-", i)
		if w := won["create "+id]; len(w) != 1 {
			t.Errorf("Create(%s) won by %q, want one process", id, w)
		} else {
			want := racerRun(id, w[0])
			if diff := cmp.Diff(load(t, c, id), utc(want), opts); diff != "" {
				t.Errorf("Load(%s) mismatch, want the winner's (-got +want):\n%s", id, diff)
			}
			if diff := cmp.Diff(entries(t, s, id, 0), numbered(message(w[0], t0)), opts); diff != "" {
				t.Errorf("Entries(%s) mismatch, want the winner's (-got +want):\n%s", id, diff)
			}
		}
		id = fmt.Sprint("held-", i)
		if w := won["acquire "+id]; len(w) != 1 {
			t.Errorf("Acquire(%s) won by %q, want one process", id, w)
		} else if diff := cmp.Diff(load(t, c, id).Lease, racerLease(w[0])); diff != "" {
			t.Errorf("Lease of %s mismatch, want the winner's (-got +want):\n%s", id, diff)
		}
	}
	checkPairs(t, entries(t, s, "shared", 0), processes, appends)
}

// racer is a process RunProcesses started, named name. It reports on
// standard output what it won and lost.
func racer(t *testing.T, s store.Store, name string) {
	report("ready")
	if line, err := bufio.NewReader(os.Stdin).ReadString('\n'); line != "go\n" {
		t.Fatalf("%s was not told to go: %q, %v", name, line, err)
	}
	for i := range rounds {
		id := fmt.Sprint("race-", i)
		switch err := s.Create(t.Context(), racerRun(id, name), message(name, t0)); {
		case err == nil:
			report("create " + id + " won")
		case errors.Is(err, store.ErrExists):
			report("create " + id + " lost")
		default:
			t.Errorf("%s: Create(%s): %v", name, id, err)
		}
		id = fmt.Sprint("held-", i)
		switch err := s.Acquire(t.Context(), id, racerLease(name), at(time.Hour)); {
		case err == nil:
			report("acquire " + id + " won")
		case errors.Is(err, store.ErrLeased):
			if le, _ := errors.AsType[*store.LeaseError](err); le == nil || le.Owner != name || !strings.HasPrefix(le.Held.Owner, "process-") {
				t.Errorf("%s: Acquire(%s): %v, want a LeaseError naming another process", name, id, err)
			}
			report("acquire " + id + " lost")
		default:
			t.Errorf("%s: Acquire(%s): %v", name, id, err)
		}
	}
	for i := range appends {
		if err := s.Append(t.Context(), "shared", store.Lease{Owner: ""}, pair(name, i)...); err != nil {
			t.Errorf("%s: Append(shared): %v", name, err)
		}
	}
}

func racerRun(id, name string) store.Run {
	run := sampleRun(id)
	run.Idea = name
	return run
}

func racerLease(name string) store.Lease {
	return store.Lease{Owner: name, Expires: at(2 * time.Hour)}
}

// A process is the test binary run again by RunProcesses.
type process struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// ready is closed when it reports ready, done when its standard
	// output ends; then reports holds what it reported after ready, and
	// log its other output.
	ready, done chan struct{}
	reports     []string
	log         bytes.Buffer
	waited      bool
	err         error
}

// start starts the test binary as process name, running test on db.
func start(ctx context.Context, test, db, name string) (*process, error) {
	p := &process{name: name, ready: make(chan struct{}), done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run="+runPattern(test), "-test.count=1")
	p.cmd.Env = append(os.Environ(), dbEnv+"="+db, nameEnv+"="+name)
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// Both pipes are read before Wait returns, so log needs no lock.
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	var wg sync.WaitGroup
	lines := make(chan string)
	for _, r := range []io.Reader{stdout, stderr} {
		wg.Go(func() {
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				lines <- sc.Text()
			}
		})
	}
	go func() {
		wg.Wait()
		close(lines)
	}()
	go func() {
		defer close(p.done)
		for line := range lines {
			r, ok := strings.CutPrefix(line, reportPrefix)
			switch {
			case !ok:
				fmt.Fprintln(&p.log, line)
			case r == "ready":
				close(p.ready)
			default:
				p.reports = append(p.reports, r)
			}
		}
	}()
	return p, nil
}

// wait waits for the process to end, killing it if ctx is done, and
// returns how it ended.
func (p *process) wait() error {
	if !p.waited {
		<-p.done
		p.err, p.waited = p.cmd.Wait(), true
	}
	return p.err
}

// reportPrefix marks the lines of a process's standard output that
// report to RunProcesses, among those of package testing.
const reportPrefix = "storetest report: "

func report(line string) {
	fmt.Println(reportPrefix + line)
}

// runPattern returns the -test.run pattern that runs only the test named
// name (t.Name(), subtests included).
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
