package samtemplate_test

import (
	"os"
	"testing"

	"github.com/reqtrace/reqtrace/infra/samtemplate"
)

// FuzzParse checks that no input makes Parse or Env panic or hang.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(realTemplate); err == nil {
		f.Add(data)
	}
	f.Add([]byte(intrinsics))
	f.Add([]byte("Conditions: { A: !Condition A }\nGlobals: { Function: { Environment: { Variables: { X: !If [A, a, b] } } } }\n" +
		"Resources: { F: { Type: AWS::Serverless::Function } }\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tmpl, err := samtemplate.Parse(data)
		if err != nil {
			return
		}
		for _, fn := range tmpl.Functions {
			tmpl.Env(fn.LogicalID, func(ref string) string { return ref })
		}
	})
}

// FuzzParseRate checks that ParseRate never panics and only accepts
// positive durations.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"rate(3 minutes)", "rate(1 day)", "rate(99999999999999999999 hours)", "cron(* * * * ? *)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		d, err := samtemplate.ParseRate(expr)
		if err == nil && d <= 0 {
			t.Errorf("ParseRate(%q) = %v", expr, d)
		}
	})
}
