//go:build !unix

package localaws

import (
	"os/exec"
	"syscall"
)

// sysProcAttr has nothing to set where there are no process groups.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the stand-in.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
