//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// detach starts a server's program in a process group of its own. A
// terminal's Ctrl-C goes to its foreground process group: the program
// would die of it at once, and the calls it was running would fail, while
// the run, stopping at the same signal, treats a call that its own
// cancellation cut short as not run (a durable run runs it again when
// resumed). Out of the group, the program is asked to exit when the
// session closes, after the run has ended its calls.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// stopGroup kills what is left of the process group of a server's
// program, which has exited: the programs it started and left behind (a
// wrapper's child, a helper), which would otherwise run on, holding its
// standard error. A group with no one left is not an error.
func stopGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
