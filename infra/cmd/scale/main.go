// Command scale measures where page saves write on DynamoDB (infra/scale)
// and writes the figures into docs/scale.md, between the markers
// MeasuredBegin and MeasuredEnd; `make bench` runs it:
//
//	go run ./infra/cmd/scale -doc docs/scale.md
//
// It starts DynamoDB Local and moto on free loopback ports, runs each
// workload on its own fresh tables and stops everything it started.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/reqtrace/reqtrace/infra/bench"
	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/scale"
)

// The markers around the generated part of the document.
const (
	MeasuredBegin = "<!-- scale:measured:begin (infra/cmd/scale writes this part) -->"
	MeasuredEnd   = "<!-- scale:measured:end -->"
)

// workloads are measured in this order.
var workloads = []struct {
	name string
	w    scale.Workload
}{
	{"edits with issue links", scale.Workload{Tenants: 4, Spaces: 2, Pages: 5, Requirements: 20, IssueLinks: true, Edits: 10, Changed: 5}},
	{"edits without issue links", scale.Workload{Tenants: 4, Spaces: 2, Pages: 5, Requirements: 20, Edits: 10, Changed: 5}},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	doc := flag.String("doc", "docs/scale.md", "document whose measured part to rewrite")
	flag.Parse()
	text, err := os.ReadFile(*doc)
	if err != nil {
		return err
	}
	root, err := localaws.ModuleRoot()
	if err != nil {
		return err
	}
	env, stopEnv, err := bench.StartEnv(ctx, bench.StartOptions{Root: root, Prefix: "scale"})
	defer func() { _ = stopEnv() }()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "Measured %s by `make bench` (infra/cmd/scale) on DynamoDB Local; write units read from the WikiTable's stream "+
		"(item sizes approximated from the stream's images, transactional writes counted twice). \"Saturates at\" is %d write units a second "+
		"(one partition) divided by the key's units per save: saves a second of one tenant for a tenant's key; for a key tenants share, "+
		"saves a second of the whole service, its units spread evenly over its shards. A tenant's key with shards (the outbox of an integration, \"no (8)\") "+
		"counts its tenant's units spread evenly over its shards.\n", time.Now().UTC().Format("2006-01-02"), scale.PartitionWCU)
	for i, wl := range workloads {
		res, err := env.Resources(ctx, fmt.Sprint(i))
		if err != nil {
			return err
		}
		rep, err := scale.Measure(ctx, scale.Deps{Config: env.Config, DynamoDBEndpoint: env.DynamoDBEndpoint,
			WikiTable: res.Tables["WikiTable"], QueueURL: res.Queues["OutboundQueue"]}, wl.w)
		if err != nil {
			return fmt.Errorf("%s: %w", wl.name, err)
		}
		fmt.Fprintf(&out, "\n#### %s\n\n%s: %d measured saves, %d item writes on the table.\n\n", wl.name, wl.w, rep.Saves, rep.Items)
		out.WriteString("| where | partition key (the hottest of its kind) | shared by tenants (shards) | write units per save | saturates at (saves/s) |\n|---|---|---|---|---|\n")
		for _, k := range rep.Hottest() {
			shared := "no"
			if n, ok := scale.Shards[k.Class]; ok && !k.CrossTenant {
				shared = fmt.Sprintf("no (%d)", n)
			}
			if k.CrossTenant {
				shared = fmt.Sprintf("yes (%d)", max(1, scale.Shards[k.Class]))
			}
			fmt.Fprintf(&out, "| %s | `%s` | %s | %.2f | %.0f |\n", k.Index, k.Class, shared, rep.PerSave(k), rep.SavesPerSecond(k))
		}
	}
	s := string(text)
	b, e := strings.Index(s, MeasuredBegin), strings.Index(s, MeasuredEnd)
	if b < 0 || e < b {
		return fmt.Errorf("%s has no %q … %q", *doc, MeasuredBegin, MeasuredEnd)
	}
	s = s[:b+len(MeasuredBegin)] + "\n" + out.String() + "\n" + s[e:]
	return os.WriteFile(*doc, []byte(s), 0o644)
}
