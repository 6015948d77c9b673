package wikitable

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
)

// Decoding the items searches read most (requirement rows, index items)
// without reflection: attributevalue.UnmarshalMap costs about 30 µs of CPU
// for a row of the bench (600 bytes, three properties), more than reading
// it from DynamoDB Local costs per row in a batch; decodeRowItem takes a
// tenth of that. It accepts the attribute types the write path stores
// (marshal of requirementItem and the update expressions of extprops.go,
// links.go) and hands anything else to attributevalue.UnmarshalMap, so an
// item decodes exactly as before whatever it holds
// (TestDecodeRowItemAsUnmarshalMap).

// decodeRowItem decodes a requirement row as attributevalue.UnmarshalMap
// would.
func decodeRowItem(av map[string]types.AttributeValue) (requirementItem, error) {
	if it, ok := decodeRowItemFast(av); ok {
		return it, nil
	}
	var it requirementItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return requirementItem{}, dynamo.Errorf("decode requirement", err)
	}
	return it, nil
}

// decodeRowItemFast decodes av when every attribute of requirementItem it
// holds has the type the write path stores; false otherwise.
func decodeRowItemFast(av map[string]types.AttributeValue) (requirementItem, bool) {
	var it requirementItem
	for name, v := range av {
		ok := true
		switch name {
		case "pk":
			it.PK, ok = str(v)
		case "sk":
			it.SK, ok = str(v)
		case "gsi1pk":
			it.GSI1PK, ok = str(v)
		case "gsi1sk":
			it.GSI1SK, ok = str(v)
		case "space":
			it.Space, ok = str(v)
		case "key":
			it.Key, ok = str(v)
		case "baseline":
			var n int64
			n, ok = num(v)
			it.Base = int(n)
		case "status":
			it.Status, ok = str(v)
		case "text":
			it.Text, ok = str(v)
		case "html":
			it.HTML, ok = str(v)
		case "needsHtml":
			b, isBool := v.(*types.AttributeValueMemberBOOL)
			ok = isBool
			if ok {
				it.NeedsHT = b.Value
			}
		case "props":
			it.Props, ok = props(v)
		case "ext":
			it.Ext, ok = props(v)
		case "pageId":
			it.PageID, ok = str(v)
		case "pageTitle":
			it.Title, ok = str(v)
		case "deps":
			it.Deps, ok = deps(v)
		case "rdeps":
			it.RDeps, ok = strSet(v)
		case "issues":
			it.Issues, ok = issueLinks(v)
		case "sus":
			it.Suspects, ok = strSet(v)
		case "lv":
			it.LinksVersion, ok = num(v)
		case "newSpaceKey":
			it.NewSpace, ok = str(v)
		case "newKey":
			it.NewKey, ok = str(v)
		}
		if !ok {
			return requirementItem{}, false
		}
	}
	return it, true
}

// decodeIndexID decodes the space and key of an index item as
// attributevalue.UnmarshalMap into indexItem would.
func decodeIndexID(av map[string]types.AttributeValue) (space, key string, err error) {
	s, okS := optStr(av["spaceKey"])
	k, okK := optStr(av["key"])
	if okS && okK {
		return s, k, nil
	}
	var it indexItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return "", "", dynamo.Errorf("decode index item", err)
	}
	return it.Space, it.Key, nil
}

// optStr is str for an attribute that may be absent.
func optStr(v types.AttributeValue) (string, bool) {
	if v == nil {
		return "", true
	}
	return str(v)
}

func str(v types.AttributeValue) (string, bool) {
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return s.Value, true
}

func num(v types.AttributeValue) (int64, bool) {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	return i, err == nil
}

func strSet(v types.AttributeValue) ([]string, bool) {
	ss, ok := v.(*types.AttributeValueMemberSS)
	if !ok {
		return nil, false
	}
	return ss.Value, true
}

// members returns the maps of a list of maps.
func members(v types.AttributeValue) ([]map[string]types.AttributeValue, bool) {
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		return nil, false
	}
	out := make([]map[string]types.AttributeValue, len(l.Value))
	for i, e := range l.Value {
		m, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			return nil, false
		}
		out[i] = m.Value
	}
	return out, true
}

// fields reads the string attributes names of m into dst (absent ones
// stay ""); false when one has another type.
func fields(m map[string]types.AttributeValue, names []string, dst []*string) bool {
	for i, n := range names {
		v, present := m[n]
		if !present {
			continue
		}
		s, ok := str(v)
		if !ok {
			return false
		}
		*dst[i] = s
	}
	return true
}

var (
	propNames  = []string{"k", "v"}
	depNames   = []string{"s", "k", "r"}
	issueNames = []string{"sid", "ik", "r", "o"}
)

func props(v types.AttributeValue) ([]prop, bool) {
	ms, ok := members(v)
	if !ok {
		return nil, false
	}
	out := make([]prop, len(ms))
	for i, m := range ms {
		if !fields(m, propNames, []*string{&out[i].K, &out[i].V}) {
			return nil, false
		}
	}
	return out, true
}

func deps(v types.AttributeValue) ([]dep, bool) {
	ms, ok := members(v)
	if !ok {
		return nil, false
	}
	out := make([]dep, len(ms))
	for i, m := range ms {
		if !fields(m, depNames, []*string{&out[i].S, &out[i].K, &out[i].R}) {
			return nil, false
		}
	}
	return out, true
}

func issueLinks(v types.AttributeValue) ([]issueLink, bool) {
	ms, ok := members(v)
	if !ok {
		return nil, false
	}
	out := make([]issueLink, len(ms))
	for i, m := range ms {
		if !fields(m, issueNames, []*string{&out[i].SID, &out[i].IK, &out[i].R, &out[i].O}) {
			return nil, false
		}
	}
	return out, true
}
