package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/sqlite"
)

// buildOrders builds this program once for the tests that run it.
func buildOrders(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "orders")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func command(bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// journalOf reads a run's journal from a SQLite store.
func journalOf(t *testing.T, db, id string) []store.Entry {
	t.Helper()
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var es []store.Entry
	for e, err := range st.Entries(context.Background(), id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return es
}

// canonical is a run's log with what differs between runs removed (dates),
// sorted, since parallel calls finish in any order.
func canonical(t *testing.T, es []store.Entry) []string {
	t.Helper()
	var out []string
	for _, e := range es {
		if e.Type != store.EntryMessage {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(e.Data, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "_date")
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// callKey names a call by its tool and instance.
func callKey(raw json.RawMessage) string {
	var c struct {
		Tool     string `json:"_tool"`
		Instance string `json:"_instance"`
	}
	_ = json.Unmarshal(raw, &c)
	return c.Tool + " " + c.Instance
}

// TestCrashResume kills a run with SIGKILL in the middle, resumes it, and
// checks that its log equals an uninterrupted run's and that no call that
// had finished ran again.
func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := buildOrders(t)
	dir := t.TempDir()
	ref, db, audit := filepath.Join(dir, "ref.db"), filepath.Join(dir, "crash.db"), filepath.Join(dir, "audit")
	run := []string{"run", "orders.json", "--input", "@orders.jsonl", "--json"}

	if out, err := command(bin, nil, append(run, "--store", ref, "--id", "ref")...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	want := canonical(t, journalOf(t, ref, "ref"))

	// A short lease, so that the resume after the kill need not wait long
	// for it to expire, yet long enough that a loaded machine still tries
	// the first resume while it holds.
	cmd := command(bin, []string{"ORDERS_DELAY=1ms", "ORDERS_AUDIT=" + audit}, append(run, "--store", db, "--id", "crash", "--lease", "5s")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once a third of its calls have run.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the run made no progress")
		}
		time.Sleep(5 * time.Millisecond)
		// The audit file grows by a line per call run.
		if b, err := os.ReadFile(audit); err == nil && bytes.Count(b, []byte("\n")) >= 1200 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the run was not killed: %v\n%s", err, stderr.String())
	}
	before := journalOf(t, db, "crash")
	started, settled := map[string]string{}, map[string]bool{}
	for _, e := range before {
		switch e.Type {
		case store.EntryStarted:
			started[e.Call] = callKey(e.Data)
		case store.EntrySettled:
			settled[e.Call] = true
		case store.EntryEnd:
			t.Fatal("the run ended before it was killed")
		}
	}

	// The killed process still holds the run until its lease expires.
	out, err := command(bin, nil, "resume", "crash", "--store", db).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is held by") {
		t.Fatalf("a resume while the lease holds: %v\n%s", err, out)
	}
	time.Sleep(5 * time.Second)
	// Two resumes at once: one takes the run over; the other finds it
	// held, or done if it comes late. No call runs twice.
	resumes := make([]*exec.Cmd, 2)
	outs := make([]bytes.Buffer, 2)
	for i := range resumes {
		resumes[i] = command(bin, []string{"ORDERS_AUDIT=" + audit}, "resume", "crash", "--store", db, "--json")
		resumes[i].Stdout, resumes[i].Stderr = &outs[i], &outs[i]
		if err := resumes[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	done := 0
	for i, r := range resumes {
		err := r.Wait()
		out := bytes.TrimSpace(outs[i].Bytes())
		var sum struct {
			Status string `json:"status"`
		}
		switch {
		case err == nil && json.Unmarshal(out[bytes.LastIndexByte(out, '\n')+1:], &sum) == nil && sum.Status == "done":
			done++
		case err != nil && bytes.Contains(out, []byte("is held by")):
		default:
			t.Fatalf("resume %d: %v\n%s", i, err, out)
		}
	}
	if done == 0 {
		t.Fatal("no resume finished the run")
	}
	settledTwice, ends := map[string]int{}, 0
	for _, e := range journalOf(t, db, "crash") {
		switch e.Type {
		case store.EntrySettled:
			if settledTwice[e.Call]++; settledTwice[e.Call] == 2 {
				t.Errorf("call %s settled twice", e.Call)
			}
		case store.EntryEnd:
			ends++
		}
	}
	if ends != 1 {
		t.Errorf("%d end entries", ends)
	}
	got := canonical(t, journalOf(t, db, "crash"))
	if !slices.Equal(got, want) {
		t.Errorf("the resumed log differs from the uninterrupted one: %d and %d messages", len(got), len(want))
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Errorf("first difference:\n got %s\nwant %s", got[i], want[i])
				break
			}
		}
	}

	// Every call ran; a call that had settled before the kill ran once.
	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs := map[string]int{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		runs[sc.Text()]++
	}
	if len(runs) != 3*1200 {
		t.Errorf("%d distinct calls ran, want 3600", len(runs))
	}
	finished := map[string]bool{}
	for id, key := range started {
		if settled[id] {
			finished[key] = true
		}
	}
	again := 0
	for key, n := range runs {
		if n > 1 {
			again++
			if finished[key] {
				t.Errorf("%s had finished before the kill and ran %d times", key, n)
			}
		}
	}
	t.Logf("killed after %d settled calls; %d interrupted calls ran again", len(finished), again)
	if len(finished) == 0 || strings.Contains(stderr.String(), "panic") {
		t.Errorf("finished %d; stderr %s", len(finished), stderr.String())
	}
}

// TestInterruptResume stops a run with SIGINT (Ctrl-C): it exits with
// status 130, the run is saved as interrupted, and resume finishes it with
// the same log as an uninterrupted run.
func TestInterruptResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := buildOrders(t)
	dir := t.TempDir()
	ref, db, audit := filepath.Join(dir, "ref.db"), filepath.Join(dir, "int.db"), filepath.Join(dir, "audit")
	run := []string{"run", "orders.json", "--input", "@orders.jsonl", "--json"}
	if out, err := command(bin, nil, append(run, "--store", ref, "--id", "ref")...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	cmd := command(bin, []string{"ORDERS_DELAY=1ms", "ORDERS_AUDIT=" + audit}, append(run, "--store", db, "--id", "int")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the run made no progress")
		}
		if b, err := os.ReadFile(audit); err == nil && bytes.Count(b, []byte("\n")) >= 600 {
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "continue it with go run ./examples/orders resume int") {
		t.Fatalf("exit %v; stderr %s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"status":"interrupted"`) {
		t.Errorf("summary %s", stdout.String())
	}
	if out, err := command(bin, nil, "resume", "int", "--store", db, "--json").CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if got, want := canonical(t, journalOf(t, db, "int")), canonical(t, journalOf(t, ref, "ref")); !slices.Equal(got, want) {
		t.Errorf("the resumed log differs from the uninterrupted one: %d and %d messages", len(got), len(want))
	}
}

// TestRunIDRace starts two runs with the same id at once: one runs, the
// other fails at once saying the run exists, and the journal has one end.
func TestRunIDRace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	bin := buildOrders(t)
	db := filepath.Join(t.TempDir(), "race.db")
	cmds := make([]*exec.Cmd, 2)
	outs := make([]bytes.Buffer, 2)
	for i := range cmds {
		cmds[i] = command(bin, []string{"ORDERS_DELAY=1ms"}, "run", "orders.json", "--input", "@orders.jsonl", "--json", "--store", db, "--id", "race")
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	ok := 0
	for i, c := range cmds {
		switch err := c.Wait(); {
		case err == nil:
			ok++
		case !strings.Contains(outs[i].String(), "already exists"):
			t.Errorf("run %d: %v\n%s", i, err, outs[i].String())
		}
	}
	ends := 0
	for _, e := range journalOf(t, db, "race") {
		if e.Type == store.EntryEnd {
			ends++
		}
	}
	if ok != 1 || ends != 1 {
		t.Errorf("%d runs succeeded, %d end entries", ok, ends)
	}
}
