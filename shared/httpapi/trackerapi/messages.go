package trackerapi

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// messageInDTO is a message on the wire (spec 2.5, and version 5's LINKS and
// UPDATED fields). Unknown fields are ignored: the wire format is the
// wiki's, and the spec allows it to gain fields; the required fields of
// each type catch a misspelt one, and a declared field sent under another
// case ("Type") is a 400 (httpapi.UnmarshalIgnoringUnknown).
type messageInDTO struct {
	ID             *int64  `json:"id"`
	Type           string  `json:"type"`
	AuthorKey      string  `json:"authorKey"`
	AuthorName     string  `json:"authorName"`
	SpaceKey       string  `json:"spaceKey"`
	Key            string  `json:"key"`
	Baseline       *int    `json:"baseline"`
	Estate         string  `json:"estate"`
	ObjectKey      string  `json:"objectKey"`
	Relationship   string  `json:"relationship"`
	NewHTMLExcerpt *string `json:"newHtmlExcerpt"`
	NewSpaceKey    string  `json:"newSpaceKey"`
	NewKey         string  `json:"newKey"`
	NewBaseline    *int    `json:"newBaseline"`
	NewURL         *string `json:"newUrl"`
	// Version 5.
	Links         []linkRefDTO `json:"links"`
	Version       *int         `json:"version"`
	Origin        *originDTO   `json:"origin"`
	ChangedFields []string     `json:"changedFields"`
	Suspect       *bool        `json:"suspect"`
	SuspectCause  *struct {
		Fields []string `json:"fields"`
	} `json:"suspectCause"`
}

// linkRefDTO is one PAGE link of a LINKS message.
type linkRefDTO struct {
	ObjectKey    string `json:"objectKey"`
	Relationship string `json:"relationship"`
}

// originDTO is the page defining a LINKS message's links. pageId is a
// string; a number is accepted too.
type originDTO struct {
	PageID jsontext.Value `json:"pageId"`
	Title  string         `json:"title"`
}

func (o *originDTO) entity() (tracker.PageOrigin, error) {
	if o == nil {
		return tracker.PageOrigin{}, nil
	}
	out := tracker.PageOrigin{Title: o.Title}
	switch o.PageID.Kind() {
	case 'n', 0: // null or absent
	case '"':
		if err := httpapi.Unmarshal(o.PageID, &out.PageID); err != nil {
			return tracker.PageOrigin{}, err
		}
	case '0':
		n := string(bytes.Trim(o.PageID, jsonSpace))
		if _, err := strconv.ParseInt(n, 10, 64); err != nil {
			return tracker.PageOrigin{}, apperr.Invalidf("origin.pageId must be a string or an integer")
		}
		out.PageID = n
	default:
		return tracker.PageOrigin{}, apperr.Invalidf("origin.pageId must be a string or an integer")
	}
	return out, nil
}

func (d messageInDTO) entity() tracker.Message {
	m := tracker.Message{ID: d.ID, Type: tracker.MessageType(d.Type), AuthorKey: d.AuthorKey, AuthorName: d.AuthorName,
		SpaceKey: d.SpaceKey, Key: d.Key, Estate: d.Estate, ObjectKey: d.ObjectKey, Relationship: requirement.NormalizeRelationship(d.Relationship),
		NewHTMLExcerpt: d.NewHTMLExcerpt, NewSpaceKey: d.NewSpaceKey, NewKey: d.NewKey, NewBaseline: d.NewBaseline, NewURL: d.NewURL}
	if d.Baseline != nil {
		m.Baseline = *d.Baseline // null and 0 both name the current version
	}
	if d.Links != nil {
		m.Links = make([]tracker.IssueRelationship, len(d.Links))
		for i, l := range d.Links {
			m.Links[i] = tracker.IssueRelationship{IssueKey: l.ObjectKey, Relationship: requirement.NormalizeRelationship(l.Relationship)}
		}
	}
	m.LinksVersion, m.ChangedFields, m.Suspect = d.Version, d.ChangedFields, d.Suspect
	if d.SuspectCause != nil {
		m.SuspectFields = d.SuspectCause.Fields
	}
	return m
}

// jsonSpace is JSON's whitespace (bytes.TrimSpace would also trim
// characters JSON refuses, such as \v).
const jsonSpace = " \t\r\n"

// decodeMessages reads the body of POST /rest/reqs/1/api: a JSON array of
// message objects, through the strict decoder (httpapi.Unmarshal; a message
// through httpapi.UnmarshalIgnoringUnknown, as its format may gain fields).
// A body that is not such an array, or a field of the wrong JSON type, is a
// 400 for the whole request (the sender is broken); whether each message
// makes sense is judged later, message by message.
func decodeMessages(body []byte) ([]tracker.Message, error) {
	if start := bytes.TrimLeft(body, jsonSpace); len(start) == 0 || start[0] != '[' {
		return nil, apperr.Invalidf("the body must be a JSON array of messages")
	}
	var raws []jsontext.Value
	if err := httpapi.Unmarshal(body, &raws); err != nil {
		return nil, err
	}
	if len(raws) > tracker.MaxBatch {
		return nil, apperr.Invalidf("too many messages: at most %d per request", tracker.MaxBatch)
	}
	msgs := make([]tracker.Message, len(raws))
	for i, raw := range raws {
		if raw.Kind() != '{' {
			return nil, apperr.Invalidf("message %d is not a JSON object", i)
		}
		var d messageInDTO
		if err := httpapi.UnmarshalIgnoringUnknown(raw, &d); err != nil {
			return nil, inMessage(i, err)
		}
		msgs[i] = d.entity()
		origin, err := d.Origin.entity()
		if err != nil {
			return nil, inMessage(i, err)
		}
		msgs[i].Origin = origin
	}
	return msgs, nil
}

// inMessage prefixes a 400 about message i with "message i: ", keeping the
// field it names.
func inMessage(i int, err error) error {
	e := apperr.As(err)
	if e == nil {
		return err
	}
	c := *e
	c.Message = fmt.Sprintf("message %d: %s", i, e.Message)
	if c.Field != "" {
		c.Detail = fmt.Sprintf("message %d: %s", i, e.Detail)
	}
	return &c
}
