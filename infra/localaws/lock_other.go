//go:build !unix

package localaws

// lockFile does nothing where flock is unavailable; only the in-process
// mutex guards npm ci there.
func lockFile(string) (func(), error) { return func() {}, nil }
