package mcp

import (
	"os/exec"
	"syscall"
)

// detach starts a server's program in a process group of its own, which
// a console's Ctrl-C does not reach: see proc_unix.go.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// stopGroup does nothing: a console process group cannot be killed as
// one. See proc_unix.go.
func stopGroup(*exec.Cmd) {}
