//go:build unix

package lambdashim

import (
	"errors"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the process in a group of its own: a Ctrl-C in the
// terminal then reaches only the parent, and killing the group also kills
// anything the bootstrap started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals the process group led by pid; a group that no longer
// exists is not an error.
func signalGroup(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
