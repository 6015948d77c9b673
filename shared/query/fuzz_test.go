package query

import (
	"errors"
	"reflect"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// FuzzParse: Parse never panics; its errors are Invalid with a position
// inside the query; a parsed tree renders to text that parses back to the
// same tree; and on the fixture, every driver holds wherever the tree
// matches. Seeds: testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add(`key = 'IG-1' AND NOT (jira ~ '%')`)
	reqs := fixture()
	f.Fuzz(func(t *testing.T, q string) {
		e, err := Parse(q)
		if err != nil {
			checkSyntaxError(t, err, len(q))
			return
		}
		if e == nil {
			return
		}
		assertRoundTrip(t, e)
		env := graphEnv(t, reqs, e)
		drivers := Drivers(e)
		for _, r := range reqs {
			if !Match(e, r, env) {
				continue
			}
			for _, d := range drivers {
				if !d.Holds(r, env) {
					t.Fatalf("%s matches %s but its driver %v does not hold", e, id(r), d)
				}
			}
		}
	})
}

// FuzzParseOrder: ParseOrder never panics, rejects with a positioned Invalid
// error, and its result renders to text that parses back to it.
func FuzzParseOrder(f *testing.F) {
	f.Add("REQKEY ASC, BASELINE DESC")
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOrder(s)
		if err != nil {
			checkSyntaxError(t, err, len(s))
			return
		}
		back, err := ParseOrder(o.String())
		if err != nil || !reflect.DeepEqual(back, o) {
			t.Fatalf("ParseOrder(%q) = %v, %v; want %v", o.String(), back, err, o)
		}
	})
}

func checkSyntaxError(t *testing.T, err error, n int) {
	t.Helper()
	ae := apperr.As(err)
	if ae == nil || !errors.Is(err, apperr.ErrInvalid) {
		t.Fatalf("error %v is not an invalid apperr.Error", err)
	}
	if ae.Position < 0 || ae.Position > n {
		t.Fatalf("error %q at position %d, outside [0, %d]", ae.Message, ae.Position, n)
	}
}
