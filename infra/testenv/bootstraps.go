package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/samtemplate"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Bootstraps returns a directory holding every function's bootstrap
// (<LogicalId>/bootstrap), for tests that run the local stack: the one
// `make build` produced (REQTRACE_BUILD_DIR, which `make test` sets), or
// a fresh build of template.yaml's functions, once per test binary.
func Bootstraps(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if dir := os.Getenv("REQTRACE_BUILD_DIR"); dir != "" {
			buildDir = dir
			return
		}
		root, err := localaws.ModuleRoot()
		if err != nil {
			buildErr = err
			return
		}
		tmpl, err := samtemplate.Load(filepath.Join(root, "template.yaml"))
		if err != nil {
			buildErr = err
			return
		}
		if buildDir, buildErr = os.MkdirTemp("", "reqtrace-bootstraps-"); buildErr != nil {
			return
		}
		for _, fn := range tmpl.Functions {
			cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o",
				filepath.Join(buildDir, fn.LogicalID, "bootstrap"), "./"+fn.Dir())
			cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("build %s: %v: %s", fn.LogicalID, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("build bootstraps: %v", buildErr)
	}
	return buildDir
}
