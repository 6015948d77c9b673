package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
)

// startProfile starts a CPU profile of the bench process into
// <ProfileDir>/<name>.cpu.pprof when ProfileDir is set; stop ends it and
// may be called more than once. The services run in this process, so the
// profile shows where their time goes (and the SDK's, serialising calls to
// DynamoDB Local, which runs in its own process).
func startProfile(env *Env, name string) (stop func(), err error) {
	if env.ProfileDir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(env.ProfileDir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(env.ProfileDir, name+".cpu.pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}, nil
}
