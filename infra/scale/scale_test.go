package scale_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/scale"
	"github.com/reqtrace/reqtrace/infra/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestMeasure runs a small workload and checks the writes it counts: the
// outbound messages' pending entries go to the sharded partitions (two
// writes each: written, then removed once in SQS), no other key is shared
// by tenants but the recovery index's shards, and the tenant-wide index of
// current requirements is written once per changed requirement, plus once
// per page for the requirement after the changed ones, whose dependency on
// a changed one the first edit marks suspect (text is a suspect field by
// default).
func TestMeasure(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	w := scale.Workload{Tenants: 3, Spaces: 2, Pages: 2, Requirements: 10, IssueLinks: true, Edits: 6, Changed: 2}
	rep, err := scale.Measure(context.Background(), scale.Deps{Config: env.Config, DynamoDBEndpoint: env.DynamoDBEndpoint,
		WikiTable: env.WikiTable, QueueURL: env.QueueURL}, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d saves, %d item writes, %d partition keys", w, rep.Saves, rep.Items, len(rep.Keys))
	pending, cur, shards := 0, map[string]int{}, map[string]bool{}
	for _, k := range rep.Keys {
		switch {
		case k.Index == "table" && strings.Contains(k.Key, "#OUTBOX#"):
			// The messages go to the integration's shards, never to the
			// single partition of the releases before them.
			if k.Class != "T#<tenant>#OUTBOX#<serviceId>#<nn>" || k.CrossTenant {
				t.Errorf("outbox messages in %s", k.Key)
			}
			shards[k.Key] = true
		case k.Index == "gsi1" && strings.HasPrefix(k.Key, "OUTBOX#PENDING"):
			if k.Class != "OUTBOX#PENDING#<nn>" {
				t.Errorf("pending entries in %s", k.Key)
			}
			pending += k.Writes
		case k.Index == "gsi1" && k.Class == "T#<tenant>#CUR":
			cur[k.Key] = k.Writes
		case k.CrossTenant && k.Class != "UNFINISHED#<nn>":
			t.Errorf("key %s %s written by several tenants", k.Index, k.Key)
		}
	}
	// One UPDATED message per changed requirement with an issue link.
	if want := 2 * rep.Saves * w.Changed; pending != want {
		t.Errorf("%d writes on the pending partitions, want %d (2 per message)", pending, want)
	}
	// 24 messages a tenant over 8 shards: more than one shard each.
	if len(shards) <= w.Tenants {
		t.Errorf("outbox messages in %d partitions for %d tenants, want them spread over the shards", len(shards), w.Tenants)
	}
	if len(cur) != w.Tenants {
		t.Errorf("current-requirement index written for %d tenants, want %d", len(cur), w.Tenants)
	}
	for k, n := range cur {
		if want := w.Edits*w.Changed + w.Spaces*w.Pages; n != want {
			t.Errorf("%s: %d writes, want %d (one per changed requirement, one per page marked suspect)", k, n, want)
		}
	}
	for _, k := range rep.Hottest() {
		t.Logf("%-5s %-32s %5.2f WCU per save → %8.0f saves/s", k.Index, k.Class, rep.PerSave(k), rep.SavesPerSecond(k))
	}
}
