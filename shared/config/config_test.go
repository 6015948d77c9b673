package config

import (
	"testing"
	"time"
)

func env(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoad(t *testing.T) {
	c, err := Load(env(map[string]string{"WIKI_TABLE": "w", "AUTH_CACHE_TTL": "5s", "LOG_LEVEL": "debug"}))
	if err != nil || c.WikiTable != "w" || c.AuthCacheTTL != 5*time.Second || c.TenantRate != 200 {
		t.Fatalf("%+v %v", c, err)
	}
	if err := c.Require("WIKI_TABLE", "AUTH_TABLE"); err == nil {
		t.Fatal("missing AUTH_TABLE accepted")
	}
	c, err = Load(env(map[string]string{"OUTBOUND_QUEUE_URL": "q", "OUTBOUND_DLQ_URL": " dlq "}))
	if err != nil || c.OutboundDLQURL != "dlq" || c.Require("OUTBOUND_QUEUE_URL", "OUTBOUND_DLQ_URL") != nil {
		t.Fatalf("OUTBOUND_DLQ_URL: %+v %v", c, err)
	}
	if err := (Config{}).Require("OUTBOUND_DLQ_URL"); err == nil {
		t.Fatal("missing OUTBOUND_DLQ_URL accepted")
	}
	if c.AllowPrivateTargets {
		t.Fatal("ALLOW_PRIVATE_TARGETS is on by default")
	}
	for v, want := range map[string]bool{"true": true, "TRUE": true, "1": true, "false": false, " false ": false} {
		if c, err := Load(env(map[string]string{"ALLOW_PRIVATE_TARGETS": v})); err != nil || c.AllowPrivateTargets != want {
			t.Errorf("ALLOW_PRIVATE_TARGETS=%q: %v %v", v, c.AllowPrivateTargets, err)
		}
	}
	if c, err := Load(env(map[string]string{"TENANT_RATE": " 50 "})); err != nil || c.TenantRate != 50 {
		t.Errorf("TENANT_RATE=50: %d %v", c.TenantRate, err)
	}
	for _, bad := range []map[string]string{{"AUTH_CACHE_TTL": "soon"}, {"TENANT_RATE": "-1"}, {"TENANT_RATE": "0"}, {"TENANT_RATE": "2.5"},
		{"TENANT_RATE": "100001"}, {"LOG_LEVEL": "loud"}, {"ALLOW_PRIVATE_TARGETS": "yes"}} {
		if _, err := Load(env(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
