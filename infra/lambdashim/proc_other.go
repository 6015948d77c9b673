//go:build !unix

package lambdashim

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup does nothing where process groups do not exist.
func setProcessGroup(cmd *exec.Cmd) {}

// signalGroup kills the process itself: without process groups or SIGTERM,
// every stop is a kill.
func signalGroup(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	_ = p.Kill()
	return nil
}
