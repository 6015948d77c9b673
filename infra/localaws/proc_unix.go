//go:build unix && !linux

package localaws

import "syscall"

// sysProcAttr puts the stand-in in its own process group. There is no
// parent-death signal outside Linux: a test binary killed with SIGKILL
// leaves its stand-ins running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
