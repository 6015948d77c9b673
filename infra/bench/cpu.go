package bench

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) this process has used. The
// in-process measurements run the services here and DynamoDB Local in its
// own JVM, so the CPU of a measured section against its wall time tells the
// services' own work from waiting on DynamoDB Local.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// LoadAverage returns the 1, 5 and 15 minute load averages of
// /proc/loadavg, "unknown" elsewhere. Other work on the machine slows every
// timed figure; the report shows the load around the run.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux platform Go supports.
const clockTicks = 100

// processCPU returns the CPU time (user + system) process pid has used, 0
// when it cannot be read.
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after its
	// closing parenthesis are numbered from 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// findDynamoDBLocal returns the pid of the DynamoDB Local JVM listening on
// the port of endpoint, 0 if there is none: its CPU time shows how much of
// a measurement was DynamoDB Local's own work.
func findDynamoDBLocal(endpoint string) int {
	u, err := url.Parse(endpoint)
	if err != nil || u.Port() == "" {
		return 0
	}
	want := "\x00-port\x00" + u.Port() + "\x00"
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte("DynamoDBLocal.jar")) && bytes.Contains(append(cmd, 0), []byte(want)) {
			return pid
		}
	}
	return 0
}

// cpuMeter reads the CPU used by this process and by DynamoDB Local.
type cpuMeter struct{ dynamoPID int }

// cpuSample is the CPU used so far by this process and by DynamoDB Local.
type cpuSample struct{ self, dynamo time.Duration }

func (m cpuMeter) now() cpuSample {
	return cpuSample{self: cpuTime(), dynamo: processCPU(m.dynamoPID)}
}

// since returns the CPU used since s.
func (m cpuMeter) since(s cpuSample) cpuSample {
	n := m.now()
	return cpuSample{self: n.self - s.self, dynamo: n.dynamo - s.dynamo}
}
