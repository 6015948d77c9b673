// Package wikitable implements the wiki side's stores on the WikiTable:
// requirement rows and their search index, pages and page leases, baselines
// and freeze jobs, integrations and their reconcile index, the outbox of
// messages to trackers, and settings. It imports only the domain packages
// this table serves and the DynamoDB mechanics of package dynamo.
//
// Key design (docs/architecture.md has the full table). KEYU is the
// requirement key folded by requirement.FoldKey: keys are unique per space
// ignoring case.
//
//	current requirement  pk T#t#S#<SPACE>           sk R#<KEYU>     gsi1 T#t#CUR  / <KEYU>#<SPACE>
//	archived copy        pk T#t#S#<SPACE>#B#<n8>    sk R#<KEYU>     gsi1 T#t#ARCH / <KEYU>#<SPACE>#<inv8(n)>
//	page                 pk T#t#PAGE#<pageId>       sk PAGE         gsi1 T#t#CHILDREN#<parentId> / <pageId>
//	                                                                gsi2 T#t#TITLE#<title folded> / <pageId>
//	                                                                gsi3 UNFINISHED#<nn> / <due millis>#<page pk> (while an operation runs or did not finish)
//	space registry       pk T#t#SPACES              sk <SPACE>
//	index item           pk T#t#IX#<kind>#<value>   sk <KEYU>#<SPACE>          (property P#, external E#, issue J#)
//	baseline             pk T#t#S#<SPACE>           sk BL#<n8>
//	baseline counter     pk T#t#S#<SPACE>           sk BLCOUNTER
//	settings             pk T#t#SETTINGS            sk SETTINGS
//	integration          pk T#t#INTEG               sk <serviceId>
//	outbox message       pk T#t#OUTBOX#<serviceId>#<nn>  sk M#<messageId>  (nn: one of 8, by message id; T#t#OUTBOX#<serviceId> before the shards)
//
// A current-requirement item may be a stub (no status) that only carries the
// reverse dependencies of a requirement no page defines yet.
package wikitable

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// maxBaseline bounds baseline numbers so they fit the 8-digit sort keys.
const maxBaseline = 99999999

func spacePK(tenant, space string) string { return dynamo.TenantPrefix(tenant) + "S#" + space }

func baselinePK(tenant, space string, n int) string {
	return fmt.Sprintf("%sS#%s#B#%08d", dynamo.TenantPrefix(tenant), space, n)
}

func reqSK(key string) string { return "R#" + requirement.FoldKey(key) }

// reqPK is the partition of a requirement row: the space partition for the
// current version, the baseline's partition for an archived copy.
func reqPK(tenant, space string, baseline int) string {
	if baseline == 0 {
		return spacePK(tenant, space)
	}
	return baselinePK(tenant, space, baseline)
}

func curGSI1PK(tenant string) string  { return dynamo.TenantPrefix(tenant) + "CUR" }
func archGSI1PK(tenant string) string { return dynamo.TenantPrefix(tenant) + "ARCH" }

func curGSI1SK(space, key string) string { return requirement.FoldKey(key) + "#" + space }

func archGSI1SK(space, key string, n int) string {
	return fmt.Sprintf("%s#%s#%08d", requirement.FoldKey(key), space, maxBaseline-n)
}

func pagePK(tenant, pageID string) string { return dynamo.TenantPrefix(tenant) + "PAGE#" + pageID }
func childrenPK(tenant, parent string) string {
	return dynamo.TenantPrefix(tenant) + "CHILDREN#" + parent
}
func spacesPK(tenant string) string { return dynamo.TenantPrefix(tenant) + "SPACES" }

// titlePK is the gsi2 partition of the pages titled title, folded as the
// search indexes fold values (indexValue): pages whose titles are equal
// ignoring case share it.
func titlePK(tenant, title string) string {
	return dynamo.TenantPrefix(tenant) + "TITLE#" + indexValue(title)
}

// indexPK is the partition of a search index item: kind "P" (property,
// value "<name>#<value>"), "E" (external property, the same) or "J" (issue
// key), value as indexValue gives it
// (folded, so the index is a superset of the exact match, which the
// evaluator then checks).
func indexPK(tenant, kind, value string) string {
	return dynamo.TenantPrefix(tenant) + "IX#" + kind + "#" + value
}

func indexSK(space, key string) string { return requirement.FoldKey(key) + "#" + space }

// spaceIndexPK is the gsi1 partition of a search index's items of one
// space: the partition indexPK(tenant, kind, value) restricted to space.
func spaceIndexPK(tenant, space, kind, value string) string {
	return dynamo.TenantPrefix(tenant) + "IXS#" + space + "#" + kind + "#" + value
}

// UnfinishedShards spreads the recovery index (gsi3) over partitions: each
// page operation writes its entry there twice (the lease, its end), so one
// partition would bound every tenant's saves together.
const UnfinishedShards = 64

// unfinishedPK is the gsi3 partition of a page's recovery entry, one of
// UnfinishedShards, chosen by the page.
func unfinishedPK(tenant, pageID string) string {
	h := fnv.New32a()
	h.Write([]byte(tenant + "/" + pageID))
	return fmt.Sprintf("UNFINISHED#%02d", h.Sum32()%UnfinishedShards)
}

// unfinishedSK is the gsi3 sort key of a page's recovery entry: when it is
// due (Unix milliseconds, 13 digits) and the page item's pk.
func unfinishedSK(tenant, pageID string, due time.Time) string {
	return fmt.Sprintf("%013d#%s", due.UnixMilli(), pagePK(tenant, pageID))
}

// parseUnfinishedSK returns the tenant and page of a recovery entry.
func parseUnfinishedSK(sk string) (tenant, pageID string, ok bool) {
	_, pk, ok := strings.Cut(sk, "#")
	rest, ok1 := strings.CutPrefix(pk, "T#")
	i := strings.LastIndex(rest, "#PAGE#")
	if !ok || !ok1 || i < 0 {
		return "", "", false
	}
	return rest[:i], rest[i+len("#PAGE#"):], true
}
