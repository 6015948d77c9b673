package httpapi

import (
	"errors"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// FuzzUnmarshal checks that the strict decoder used by every route never
// panics and classifies every failure as a client error (400), so no body
// can produce a 500.
func FuzzUnmarshal(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a","count":1,"tags":["x"],"nested":{"on":true}}`,
		`{"name":`, `{"count":"1"}`, `{"nmae":1}`, `[]`, `null`, `{} {}`, "\xff", `{"count":1e400}`,
		`{"nested":{"on":"yes"}}`, `{"tags":[1,2]}`, `"\ud800"`,
	} {
		f.Add([]byte(seed))
	}
	type nested struct {
		On bool `json:"on"`
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v struct {
			Name   string   `json:"name"`
			Count  int      `json:"count"`
			Tags   []string `json:"tags"`
			Nested *nested  `json:"nested"`
		}
		err := Unmarshal(body, &v)
		if err != nil && !errors.Is(err, apperr.ErrInvalid) {
			t.Fatalf("Unmarshal(%q) = %v: not a 400", body, err)
		}
	})
}
