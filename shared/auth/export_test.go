package auth

import "time"

// SetNow sets the clock of a's cache, for tests.
func SetNow(a *Authenticator, now func() time.Time) { a.cache.Now = now }
