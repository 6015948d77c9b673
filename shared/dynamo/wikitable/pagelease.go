package wikitable

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// A page's save lease lives on its page item: leaseId (random) and
// leaseUntil (Unix milliseconds). Every operation that writes rows of a
// page (save, delete, reindex, a page view that gathers excerpts) takes it
// with one conditional UpdateItem before reading the rows, and ends it
// with its last write: the page put or delete conditioned on leaseId (a
// put replaces the item, so the lease attributes go with it), or an
// UpdateItem removing them. Every write of the page item is sent again
// when DynamoDB rejects it because a transaction is checking the item (an
// external-property update checks that no lease is held: extprops.go). A
// new page's lease is a placeholder item (keys and lease only, no
// version), invisible to reads, that the save's page put replaces.
//
// While a lease is held, and after an operation under it failed having
// started to write, the page item is also listed for recovery: gsi3 (keys
// only) holds it under unfinishedPK(shard) / <millis>#<page item pk>, the
// millis being when the page needs recovery if nothing ends the lease (its
// expiry; for a failed operation, the release). The write that ends an
// operation that committed removes the entry (a page put replaces the item);
// an operation that did not finish leaves it, and the next lease of the
// page finds it (Lease.Unfinished), as does the sweep (Unfinished).
// docs/indexing.md describes it.

// pgLeaseFor is how long a lease lasts: longer than any function that
// writes pages may run (29 s, template.yaml), so a running operation never
// outlives its lease, while a crashed one's lease expires a minute later.
const pgLeaseFor = 60 * time.Second

// pgLeaseMargin is how long before its lease expires an operation stops
// writing (Commit's context deadline).
const pgLeaseMargin = 10 * time.Second

// Expression names and values of the lease conditions.
var pgLeaseNames = map[string]string{"#pk": "pk", "#v": "version", "#li": "leaseId", "#lu": "leaseUntil"}

// pgLeaseFree is the condition that no unexpired lease is held.
const pgLeaseFree = "(attribute_not_exists(#lu) OR #lu < :now)"

// now is the store's clock.
func (s *WikiStore) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func pgMillis(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

// pgNames returns the expression names among pgLeaseNames that expr uses.
func pgNames(used ...string) map[string]string {
	out := make(map[string]string, len(used))
	for _, n := range used {
		out[n] = pgLeaseNames[n]
	}
	return out
}

// LeasePage takes the save lease of a page read at version (0: a page that
// did not exist), with one conditional UpdateItem: the page is still at
// that version (a new page: there is no page item, or only the placeholder
// of an expired or released lease) and no unexpired lease is held. When
// the condition fails nothing is written and the answer is
// apperr.Conflict, saying whether another request holds the lease or
// changed the page.
func (s *WikiStore) LeasePage(ctx context.Context, tenant, id string, version int) (*wiki.Lease, error) {
	now := s.now()
	l := &wiki.Lease{PageID: id, ID: rand.Text(), Version: version, Until: now.Add(pgLeaseFor)}
	cond := "#v = :v AND " + pgLeaseFree
	names := pgNames("#v", "#li", "#lu")
	values := map[string]types.AttributeValue{
		":id": &types.AttributeValueMemberS{Value: l.ID}, ":until": pgMillis(l.Until), ":now": pgMillis(now),
		":v": &types.AttributeValueMemberN{Value: strconv.Itoa(version)},
	}
	if version == 0 {
		cond = "attribute_not_exists(#pk) OR (attribute_not_exists(#v) AND " + pgLeaseFree + ")"
		names["#pk"] = "pk"
		delete(values, ":v")
	}
	// Adding pgPendingMark (a member no record entry can be) makes the
	// record an updated attribute, so UPDATED_OLD returns the record a
	// failed operation left, and nothing else of the item (not its body).
	names["#pd"] = pgPending
	values[":mark"] = &types.AttributeValueMemberSS{Value: []string{pgPendingMark}}
	// The recovery entry, whose old value (UPDATED_OLD) says that an
	// earlier operation did not finish.
	names["#u1"], names["#u2"] = "gsi3pk", "gsi3sk"
	values[":u1"] = &types.AttributeValueMemberS{Value: unfinishedPK(tenant, id)}
	values[":u2"] = &types.AttributeValueMemberS{Value: unfinishedSK(tenant, id, l.Until)}
	var out *dynamodb.UpdateItemOutput
	err := dynamo.RetryRejected(ctx, func() (err error) {
		out, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: pgKey(tenant, id),
			UpdateExpression:                    aws.String("SET #li = :id, #lu = :until, #u1 = :u1, #u2 = :u2 ADD #pd :mark"),
			ConditionExpression:                 &cond,
			ExpressionAttributeNames:            names,
			ExpressionAttributeValues:           values,
			ReturnValues:                        types.ReturnValueUpdatedOld,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if pgLeaseHeld(ccf.Item, now) {
			return nil, apperr.Wrap(apperr.Conflictf("page %s is being saved by another request; retry", id), err)
		}
		return nil, apperr.Wrap(apperr.Conflictf("page %s was changed by another request meanwhile; send it again", id), err)
	}
	if err != nil {
		return nil, dynamo.Errorf("lease page", err)
	}
	if out != nil {
		l.Leftover, l.LeftoverEdges = pgDecodePending(out.Attributes[pgPending])
		_, l.Unfinished = out.Attributes["gsi3sk"]
	}
	return l, nil
}

// pgPending is the page item's attribute recording what a commit under a
// lease may write beyond what the stored page says (wiki.Change.Pending,
// and the members of its reverse-dependency edits): rows as
// "<SPACE>/<key>", edges as "<SPACE>/<key>" of the target, pgEdgeSep and
// the encoded member. The page put that ends a successful save replaces
// the item and so clears it.
const (
	pgPending = "pendingRows"
	// pgPendingMark is the member every lease adds to the record (see
	// LeasePage); it names nothing.
	pgPendingMark = "-"
	pgEdgeSep     = "\x1e"
	// pgMaxEdgeBytes bounds the edges recorded (the page item, body
	// included, must stay under DynamoDB's 400 KB): past it a commit
	// records its rows only.
	pgMaxEdgeBytes = 64 << 10
)

func pgDecodePending(av types.AttributeValue) ([]requirement.ID, []wiki.Edge) {
	ss, ok := av.(*types.AttributeValueMemberSS)
	if !ok {
		return nil, nil
	}
	var rows []requirement.ID
	var edges []wiki.Edge
	for _, v := range ss.Value {
		target, member, isEdge := strings.Cut(v, pgEdgeSep)
		space, key, ok := strings.Cut(target, "/")
		switch {
		case !ok:
		case isEdge:
			edges = append(edges, wiki.Edge{Target: requirement.ID{SpaceKey: space, Key: key}, Source: decodeDep(member)})
		default:
			rows = append(rows, requirement.ID{SpaceKey: space, Key: key})
		}
	}
	return rows, edges
}

// pgPendingMembers encodes what a change records before writing: its
// pending rows and, unless they pass pgMaxEdgeBytes, the members of its
// reverse-dependency edits.
func pgPendingMembers(c *wiki.Change) []string {
	var out []string
	for _, id := range c.Pending {
		out = append(out, id.SpaceKey+"/"+id.Key)
	}
	var edges []string
	size := 0
	for _, e := range c.RDeps {
		for _, d := range slices.Concat(e.Add, e.Remove) {
			m := e.Target.SpaceKey + "/" + e.Target.Key + pgEdgeSep + encodeDep(d)
			edges = append(edges, m)
			size += len(m)
		}
	}
	if size <= pgMaxEdgeBytes {
		out = append(out, edges...)
	}
	return out
}

// pgRecordPending adds members (pgPendingMembers) to the page item's
// pending record, on condition that the lease is still l: before a commit
// writes anything else.
func (s *WikiStore) pgRecordPending(ctx context.Context, tenant string, l *wiki.Lease, members []string) error {
	err := dynamo.RetryRejected(ctx, func() error {
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: pgKey(tenant, l.PageID),
			UpdateExpression:         aws.String("ADD #pd :p"),
			ConditionExpression:      aws.String("#li = :id"),
			ExpressionAttributeNames: map[string]string{"#pd": pgPending, "#li": "leaseId"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":p": &types.AttributeValueMemberSS{Value: members}, ":id": &types.AttributeValueMemberS{Value: l.ID},
			},
		})
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return pgLeaseLost(l.PageID, err)
	}
	if itemTooLarge(err) {
		size := 0
		for _, m := range members {
			size += len(m)
		}
		return apperr.Wrap(apperr.TooLargef("page %s adds too many requirements at once to record them safely "+
			"(%d bytes of keys with the page, over DynamoDB's 400 KB per item); save it in two steps", l.PageID, size), err)
	}
	if err != nil {
		return dynamo.Errorf("record the rows a save may write", err)
	}
	return nil
}

// pgLeaseHeld reports whether item (as a failed condition returned it)
// carries an unexpired lease.
func pgLeaseHeld(item map[string]types.AttributeValue, now time.Time) bool {
	n, ok := item["leaseUntil"].(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	until, err := strconv.ParseInt(n.Value, 10, 64)
	return err == nil && until >= now.UnixMilli()
}

// ReleasePage gives a lease back without writing the page: it removes the
// lease attributes (one UpdateItem), or deletes a new page's placeholder
// (one DeleteItem), on condition that the lease is still this one. A lease
// that is no longer held is not an error. When the operation started to
// write (l.Writing) or an earlier one had not finished (l.Unfinished), the
// page stays listed for recovery, due now.
func (s *WikiStore) ReleasePage(ctx context.Context, tenant string, l *wiki.Lease) error {
	values := map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: l.ID}}
	var err error
	keep := l.Unfinished || l.Writing
	if l.Version == 0 && !keep {
		// A placeholder goes, unless it records rows a failed commit may
		// have written: then it stays (invisible) for the next save.
		names := pgNames("#li", "#v")
		names["#pd"] = pgPending
		values[":one"] = &types.AttributeValueMemberN{Value: "1"} // the lease's mark only
		err = dynamo.RetryRejected(ctx, func() error {
			_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: &s.table, Key: pgKey(tenant, l.PageID),
				ConditionExpression:      aws.String("#li = :id AND attribute_not_exists(#v) AND (attribute_not_exists(#pd) OR size(#pd) <= :one)"),
				ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			})
			return err
		})
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			err = s.pgEndLease(ctx, tenant, l, false, keep)
		}
	} else {
		err = s.pgEndLease(ctx, tenant, l, false, keep)
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return dynamo.Errorf("release page lease", err)
	}
	return nil
}

// pgEndLease removes the lease attributes on condition that the lease is
// l, with reconciled the pending record too. The recovery entry goes,
// unless keep: then it stays, due now.
func (s *WikiStore) pgEndLease(ctx context.Context, tenant string, l *wiki.Lease, reconciled, keep bool) error {
	update, names := "REMOVE #li, #lu", pgNames("#li", "#lu")
	values := map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: l.ID}}
	if reconciled {
		update += ", #pd"
		names["#pd"] = pgPending
	}
	if keep {
		names["#u2"] = "gsi3sk"
		update = "SET #u2 = :due " + update
		values[":due"] = &types.AttributeValueMemberS{Value: unfinishedSK(tenant, l.PageID, s.now())}
	} else {
		names["#u1"], names["#u2"] = "gsi3pk", "gsi3sk"
		update += ", #u1, #u2"
	}
	return dynamo.RetryRejected(ctx, func() error {
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: pgKey(tenant, l.PageID),
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String("#li = :id"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		})
		return err
	})
}

// pgLeaseLost is the answer when the write ending a lease finds it no
// longer held: it expired and another request took it.
func pgLeaseLost(id string, err error) error {
	return apperr.Wrap(apperr.Conflictf("page %s was changed by another request meanwhile (this request's save lease expired); send it again", id), err)
}

// pgLeaseContext bounds ctx so that writes under l stop pgLeaseMargin
// before it expires (measured with the store's clock).
func (s *WikiStore) pgLeaseContext(ctx context.Context, l *wiki.Lease) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, time.Now().Add(l.Until.Sub(s.now())-pgLeaseMargin))
}
