//go:build unix

package localaws

import (
	"os/exec"
	"syscall"
)

// killGroup kills the stand-in's process group; a group that is already
// gone is not an error.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
