package wikirequirements

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// ExternalSetter is what the external properties route needs of the wiki
// service (wiki.Service implements it).
type ExternalSetter interface {
	// SetExternal applies changes to the external properties of the
	// current row of space/key and returns the row: invalid (naming the
	// property), not found (absent, stub, DELETED, MOVED, another
	// tenant's), too large, conflict.
	SetExternal(ctx context.Context, tenant, space, key string, changes []requirement.ExternalChange) (*requirement.Requirement, error)
}

// setExternal serves PUT /rest/reqs/1/requirement2/{spaceKey}/{key}/external
// (wiki users): body {"Cost": "12", "Owner": null} sets Cost and removes
// Owner; the answer is the Requirement after the change.
func (h *Handler) setExternal(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var body externalBody
	if err := httpapi.Decode(r, &body); err != nil {
		return err
	}
	req, err := h.External.SetExternal(r.Context(), p.Tenant, r.PathValue("spaceKey"), r.PathValue("key"), body)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toRequirementDTO(req))
	return nil
}

// externalBody is the body of the external properties route: a JSON object
// whose members name properties, each a string (set) or null (remove), in
// the order sent. Duplicate names are kept, for the service to refuse.
type externalBody []requirement.ExternalChange

// UnmarshalJSON reads the object; a member of another JSON type is a 400
// naming the property.
func (b *externalBody) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return apperr.Invalidf("wrong JSON type for the body: got %s, want an object of property names and values "+
			"(a string to set, null to remove)", jsonKind(data))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return apperr.Invalidf("malformed JSON: %s", err.Error())
		}
		name, _ := tok.(string) // object keys are strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return apperr.Invalidf("malformed JSON: %s", err.Error())
		}
		c := requirement.ExternalChange{Name: name}
		switch raw[0] {
		case 'n':
		case '"':
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return apperr.Invalidf("malformed JSON: %s", err.Error())
			}
			c.Value = &v
		default:
			return apperr.InvalidField(name, "must be a string (to set it) or null (to remove it), got %s", jsonKind(raw))
		}
		*b = append(*b, c)
	}
	return nil
}

// jsonKind names the JSON kind of a valid JSON value, for error messages.
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	}
	return "a number"
}
