package baseline_test

import (
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/baseline"
)

func TestCheckNameAndLabel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field, in string
		ok        bool
	}{
		{"name", "Release 1.0", true},
		{"name", "Version é", true},
		{"name", "  ", false},
		{"name", "R1\x00", false},
		{"name", "R1\nR2", false},
		{"name", "R1\t", false},
		{"name", "\x1b[31mR1", false},
		{"name", "R1\x7f", false},
		{"name", strings.Repeat("n", baseline.MaxName+1), false},
		{"label", "", true},
		{"label", "approved", true},
		{"label", "ok\r\n", false},
		{"label", "ok\x00", false},
		{"label", "ok\x7f", false},
	} {
		check := baseline.CheckName
		if tc.field == "label" {
			check = baseline.CheckLabel
		}
		err := check(tc.in)
		if tc.ok {
			if err != nil {
				t.Errorf("%s %q: %v", tc.field, tc.in, err)
			}
			continue
		}
		if e := apperr.As(err); e == nil || e.Code != apperr.Invalid {
			t.Errorf("%s %q: %v, want a 400", tc.field, tc.in, err)
		} else if strings.ContainsAny(tc.in, "\x00\n\t\x1b\x7f\r") && e.Field != tc.field {
			t.Errorf("%s %q: field %q, want %q", tc.field, tc.in, e.Field, tc.field)
		}
	}
}
