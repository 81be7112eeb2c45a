package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal and returns its two ends.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the terminal: %v", err)
	}
	return master, tty
}

// TestProgressOnTerminal draws the bar by default on a terminal, and not
// with --json.
func TestProgressOnTerminal(t *testing.T) {
	master, tty := openPTY(t)
	if !isTerminal(tty) {
		t.Fatal("a pseudo-terminal is not a terminal")
	}
	drawn := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // ends with EIO once the terminal is closed
		drawn <- string(b)
	}()
	idea := writeFile(t, "batch.json", batch)
	reg, _ := batchEnv(false, nil)
	db := filepath.Join(t.TempDir(), "runs.db")
	var stdout strings.Builder
	for _, args := range [][]string{{"--json"}, {}} {
		code := Main(context.Background(), append([]string{"run", idea, "--input", `[{"n":1},{"n":2}]`, "--store", db}, args...),
			Env{Registry: reg, Stdout: &stdout, Stderr: tty})
		if code != 0 {
			t.Fatalf("%q: exit %d", args, code)
		}
		if len(args) == 1 {
			tty.WriteString("--\n") // what --json drew ends here
		}
	}
	tty.Close()
	out := <-drawn
	before, after, _ := strings.Cut(out, "--")
	if strings.Contains(before, "calls") {
		t.Errorf("a bar with --json: %q", before)
	}
	if !strings.Contains(after, "\r[==============================] 4/4 calls 100%  0 failed") {
		t.Errorf("no bar on a terminal: %q", after)
	}
}
