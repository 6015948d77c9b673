package trackertable

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// Keys.

const linkPrefix = "L#"

func applinkPK(tenant string) string { return dynamo.TenantPrefix(tenant) + "APPLINK" }
func pendingPK(tenant string) string { return dynamo.TenantPrefix(tenant) + "PENDING" }
func issuePK(tenant, issueKey string) string {
	return dynamo.TenantPrefix(tenant) + "ISSUE#" + issueKey
}

func baselinePart(b int) string {
	if b <= 0 {
		return "-"
	}
	return strconv.Itoa(b)
}

func refPart(r tracker.ReqRef) string {
	return r.ApplinkID + "#" + r.SpaceKey + "#" + r.Key + "#" + baselinePart(r.Baseline)
}

func reqPK(tenant string, r tracker.ReqRef) string {
	return dynamo.TenantPrefix(tenant) + "REQ#" + refPart(r)
}

// applinkReqsPK is the gsi1 partition of an applink's requirement items:
// what deleting the applink reads to find its links.
func applinkReqsPK(tenant, applinkID string) string {
	return dynamo.TenantPrefix(tenant) + "AREQ#" + applinkID
}

func linkSK(l tracker.Link) string { return linkPrefix + refPart(l.Req) + "#" + l.Relationship }

func itemKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
}
