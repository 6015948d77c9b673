package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Machine describes where the figures were measured.
type Machine struct {
	CPU    string `json:"cpu"`    // model name from /proc/cpuinfo
	NProc  int    `json:"nproc"`  // processors usable by this process
	Memory string `json:"memory"` // MemTotal from /proc/meminfo
	Go     string `json:"go"`     // go version of the toolchain and this binary's platform
	OS     string `json:"os"`     // kernel, from uname -sr
	Java   string `json:"java"`   // the JVM DynamoDB Local runs on
	Moto   string `json:"moto"`   // moto_server's version
	// LoadBefore and LoadAfter are /proc/loadavg around the run: other
	// work on the machine slows the timed figures.
	LoadBefore string    `json:"load_before"`
	LoadAfter  string    `json:"load_after"`
	Date       time.Time `json:"date"`
}

// DescribeMachine collects the machine's description; what it cannot read
// is "unknown".
func DescribeMachine(ctx context.Context) Machine {
	return Machine{
		CPU:    procField("/proc/cpuinfo", "model name"),
		NProc:  runtime.NumCPU(),
		Memory: memTotal(),
		Go:     fmt.Sprintf("%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH),
		OS:     command(ctx, "uname", "-sr"),
		Java:   firstLine(command(ctx, "java", "-version")),
		Moto:   command(ctx, "python3", "-c", "import moto; print('moto', moto.__version__)"),
		Date:   time.Now().UTC(),

		LoadBefore: LoadAverage(),
	}
}

// procField returns the value of the first "name : value" line of a /proc
// file.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// memTotal returns MemTotal in GiB.
func memTotal() string {
	v := procField("/proc/meminfo", "MemTotal")
	var kb int64
	if _, err := fmt.Sscanf(v, "%d kB", &kb); err != nil {
		return v
	}
	return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
}

// command returns the trimmed combined output of a command, "unknown" if it
// fails.
func command(ctx context.Context, name string, args ...string) string {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
