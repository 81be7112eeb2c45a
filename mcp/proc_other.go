//go:build !unix && !windows

package mcp

import "os/exec"

// detach does nothing where there are no process groups: see
// proc_unix.go.
func detach(*exec.Cmd) {}

// stopGroup does nothing where there are no process groups: see
// proc_unix.go.
func stopGroup(*exec.Cmd) {}
