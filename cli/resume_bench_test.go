package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/augceo/agent/store"
	"github.com/augceo/agent/store/sqlite"
)

// BenchmarkResume times acts resume of a plan run of 1,000 instances (two
// calls each), in SQLite, cut after its last message (a fork of it, made
// before each resume): what the command costs before and beside the
// run, opening the store and reading the journal, with no call left to
// run.
func BenchmarkResume(b *testing.B) {
	dir := b.TempDir()
	idea, in, db := filepath.Join(dir, "batch.json"), filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "runs.db")
	var input strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&input, `{"n":%d,"note":"an order as an input carries it, with a name and an address"}`+"\n", i)
	}
	for path, content := range map[string]string{idea: batch, in: input.String()} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	reg, _ := batchEnv(false, nil)
	ctx := context.Background()
	if code, _, errOut := acts(ctx, reg, "run", idea, "--input", "@"+in, "--store", db, "--id", "r"); code != 0 {
		b.Fatalf("run: exit %d: %s", code, errOut)
	}
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	last := -1
	for e, err := range st.Entries(ctx, "r", 0) {
		if err != nil {
			b.Fatal(err)
		}
		if e.Type == store.EntryMessage {
			last++
		}
	}
	runs := 0
	for b.Loop() {
		runs++
		id := fmt.Sprint("f", runs)
		b.StopTimer()
		if _, err := store.Fork(ctx, st, st, "r", last, id, time.Now()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if code, _, errOut := acts(ctx, reg, "resume", id, "--store", db, "--progress", "never"); code != 0 {
			b.Fatalf("resume: exit %d: %s", code, errOut)
		}
	}
}
