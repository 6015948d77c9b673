// Package config loads the typed configuration of a function from an injected
// environment lookup (os.LookupEnv in main, a map in tests).
package config

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/shared/ratelimit"
)

// Lookup is os.LookupEnv's shape.
type Lookup func(string) (string, bool)

// Config is everything a function may read from its environment. Each main
// states which fields it needs with Require.
type Config struct {
	WikiTable        string // WIKI_TABLE
	TrackerTable     string // TRACKER_TABLE
	AuthTable        string // AUTH_TABLE
	OutboundQueueURL string // OUTBOUND_QUEUE_URL
	OutboundDLQURL   string // OUTBOUND_DLQ_URL: the outbound queue's dead-letter queue (sync function)
	ErrorEmailFrom   string // ERROR_EMAIL_FROM (empty: API error e-mails are logged)
	ExportBucket     string // EXPORT_BUCKET: the S3 bucket of CSV exports (WikiRequirements)
	LogLevel         slog.Level
	AuthCacheTTL     time.Duration // AUTH_CACHE_TTL, default 30s
	// TenantRate (TENANT_RATE, default 200) is how many requests per
	// second a tenant may make to one application, counted across every
	// function and instance of it (shared/ratelimit); a tenant's own rate,
	// set with reqtrace-admin, replaces it.
	TenantRate  int
	HTTPTimeout time.Duration // HTTP_TIMEOUT for calls to the other application, default 10s
	// AllowPrivateTargets (ALLOW_PRIVATE_TARGETS, default false) lets the
	// two sides call loopback and private addresses: integration rpcUrls
	// and applink urls on 127.0.0.1, 10.0.0.0/8, ... (the local stack sets
	// it). Link-local, multicast, broadcast and unspecified addresses stay
	// refused (shared/netpolicy).
	AllowPrivateTargets bool
	// SessionTTL (SESSION_TTL, default 8h) is how long a browser session
	// of the wiki's web pages lasts after its login (shared/auth,
	// sessions); it is not extended by use.
	SessionTTL time.Duration
}

// Load reads the configuration.
func Load(env Lookup) (Config, error) {
	get := func(k string) string { v, _ := env(k); return strings.TrimSpace(v) }
	c := Config{
		WikiTable:        get("WIKI_TABLE"),
		TrackerTable:     get("TRACKER_TABLE"),
		AuthTable:        get("AUTH_TABLE"),
		OutboundQueueURL: get("OUTBOUND_QUEUE_URL"),
		OutboundDLQURL:   get("OUTBOUND_DLQ_URL"),
		ErrorEmailFrom:   get("ERROR_EMAIL_FROM"),
		ExportBucket:     get("EXPORT_BUCKET"),
		AuthCacheTTL:     30 * time.Second,
		TenantRate:       200,
		HTTPTimeout:      10 * time.Second,
		SessionTTL:       8 * time.Hour,
	}
	if err := c.LogLevel.UnmarshalText([]byte(orDefault(get("LOG_LEVEL"), "INFO"))); err != nil {
		return c, fmt.Errorf("LOG_LEVEL: %w", err)
	}
	for name, d := range map[string]*time.Duration{"AUTH_CACHE_TTL": &c.AuthCacheTTL, "HTTP_TIMEOUT": &c.HTTPTimeout, "SESSION_TTL": &c.SessionTTL} {
		if s := get(name); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v < 0 {
				return c, fmt.Errorf("%s: want a Go duration, got %q", name, s)
			}
			*d = v
		}
	}
	if s := get("ALLOW_PRIVATE_TARGETS"); s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return c, fmt.Errorf("ALLOW_PRIVATE_TARGETS: want true or false, got %q", s)
		}
		c.AllowPrivateTargets = v
	}
	if s := get("TENANT_RATE"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || !ratelimit.ValidRate(v) {
			return c, fmt.Errorf("TENANT_RATE: want requests per second, a whole number from 1 to %d, got %q", ratelimit.MaxRate, s)
		}
		c.TenantRate = v
	}
	return c, nil
}

// Require fails when one of the named settings is empty.
func (c Config) Require(names ...string) error {
	values := map[string]string{
		"WIKI_TABLE": c.WikiTable, "TRACKER_TABLE": c.TrackerTable, "AUTH_TABLE": c.AuthTable,
		"OUTBOUND_QUEUE_URL": c.OutboundQueueURL, "OUTBOUND_DLQ_URL": c.OutboundDLQURL,
		"EXPORT_BUCKET": c.ExportBucket,
	}
	var missing []string
	for _, n := range names {
		if values[n] == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing environment: %s", strings.Join(missing, ", "))
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
