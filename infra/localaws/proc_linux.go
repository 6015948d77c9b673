package localaws

import "syscall"

// sysProcAttr puts the stand-in in its own process group and has the
// kernel kill it when the thread that started it (kept alive for the
// child's lifetime, see startOnce) dies with the test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
