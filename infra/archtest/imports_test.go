// Package archtest holds the test that keeps reqtrace's import directions
// (docs/architecture.md, "Import directions"): it fails when a forbidden
// import appears, so the walls between packages stay up.
package archtest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/samtemplate"
)

const module = "github.com/reqtrace/reqtrace/"

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Imports    []string // non-test imports
}

// list returns every package of the module with its non-test imports.
func list(t *testing.T) []pkg {
	t.Helper()
	root, err := localaws.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: not the module", len(pkgs))
	}
	return pkgs
}

// domain are the packages that hold entities, rules and services: no AWS
// SDK, no Lambda, no storage or HTTP adapter.
var domain = []string{
	"shared/apperr", "shared/auth", "shared/baseline", "shared/integration", "shared/outbox", "shared/page",
	"shared/query", "shared/ratelimit", "shared/requirement", "shared/search", "shared/tracker", "shared/wiki",
}

// rule is one forbidden direction: a package under from (non-test code)
// must not import a package whose path starts with any of to.
type rule struct {
	why  string
	from func(path string) bool
	to   []string
}

func under(prefixes ...string) func(string) bool {
	return func(path string) bool {
		for _, p := range prefixes {
			if path == module+p || strings.HasPrefix(path, module+p+"/") {
				return true
			}
		}
		return false
	}
}

var rules = []rule{
	{"shared is the product: it never imports infra (the local stack, test and bench support)",
		under("shared"), []string{module + "infra/"}},
	{"domain packages import no AWS SDK, no Lambda, no storage or HTTP adapter",
		func(path string) bool {
			for _, d := range domain {
				if path == module+d {
					return true
				}
			}
			return false
		},
		[]string{"github.com/aws/", "github.com/awslabs/", module + "shared/dynamo", module + "shared/httpapi",
			module + "shared/queue", module + "shared/mail", module + "shared/wikiclient", module + "shared/lambdaapp",
			module + "shared/outbound"}},
	{"the outbound policy is pure: domain validation and the outbound client both use it, so it imports no package of the module",
		func(path string) bool { return path == module+"shared/netpolicy" }, []string{module}},
	{"key-range splitting is pure: the table stores and the diff both use it, so it imports no package of the module",
		func(path string) bool { return path == module+"shared/keyrange" }, []string{module}},
	{"functions build HTTP clients only through shared/outbound (the target policy, timeout and answer limit)",
		under("functions"), []string{"net/http"}},
	{"functions import only shared (a Lambda never links the local stack)",
		under("functions"), []string{module + "infra/"}},
	{"the DynamoDB mechanics serve every table: they import no table package and no domain package but apperr",
		func(path string) bool { return path == module+"shared/dynamo" },
		append([]string{module + "shared/dynamo/"}, domainBut("shared/apperr")...)},
	{"a table's store package never imports another table's", under("shared/dynamo/wikitable"),
		[]string{module + "shared/dynamo/trackertable", module + "shared/dynamo/authtable"}},
	{"a table's store package never imports another table's", under("shared/dynamo/trackertable"),
		[]string{module + "shared/dynamo/wikitable", module + "shared/dynamo/authtable"}},
	{"a table's store package never imports another table's", under("shared/dynamo/authtable"),
		[]string{module + "shared/dynamo/wikitable", module + "shared/dynamo/trackertable"}},
	{"adapters do not import each other (route groups reach storage through domain services)",
		under("shared/httpapi"), []string{module + "shared/dynamo", module + "shared/queue", module + "shared/mail"}},
	{"adapters do not import each other", under("shared/dynamo"),
		[]string{module + "shared/httpapi", module + "shared/queue", module + "shared/mail", module + "shared/wikiclient", module + "shared/lambdaapp"}},
}

// domainBut returns the domain packages' paths (with a trailing slash, so
// that their subpackages count too) except keep.
func domainBut(keep string) []string {
	var out []string
	for _, d := range domain {
		if d != keep {
			out = append(out, module+d)
		}
	}
	return out
}

// violations returns what p imports across a wall, with the reason.
func violations(p pkg) []string {
	var out []string
	for _, r := range rules {
		if !r.from(p.ImportPath) {
			continue
		}
		for _, imp := range p.Imports {
			for _, bad := range r.to {
				if imp == strings.TrimSuffix(bad, "/") || strings.HasPrefix(imp, bad) {
					out = append(out, strings.TrimPrefix(p.ImportPath, module)+" imports "+imp+": "+r.why)
				}
			}
		}
	}
	return out
}

// TestImportDirections fails when a package imports across a wall.
func TestImportDirections(t *testing.T) {
	pkgs := list(t)
	for _, p := range pkgs {
		for _, v := range violations(p) {
			t.Error(v)
		}
	}
	t.Logf("%d packages checked against %d rules", len(pkgs), len(rules))
}

// TestRulesCatchAViolation checks the checker itself: a made-up package
// breaking each rule is caught.
func TestRulesCatchAViolation(t *testing.T) {
	cases := []pkg{
		{ImportPath: module + "shared/wiki/wikitest", Imports: []string{module + "infra/testenv"}},
		{ImportPath: module + "shared/wiki", Imports: []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb"}},
		{ImportPath: module + "shared/tracker", Imports: []string{module + "shared/dynamo"}},
		{ImportPath: module + "functions/sync", Imports: []string{module + "infra/localstack"}},
		{ImportPath: module + "shared/dynamo", Imports: []string{module + "shared/wiki"}},
		{ImportPath: module + "shared/dynamo", Imports: []string{module + "shared/dynamo/wikitable"}},
		{ImportPath: module + "shared/dynamo/trackertable", Imports: []string{module + "shared/dynamo/wikitable"}},
		{ImportPath: module + "shared/dynamo/wikitable", Imports: []string{module + "shared/dynamo/authtable"}},
		{ImportPath: module + "shared/httpapi/trackerapi", Imports: []string{module + "shared/dynamo/trackertable"}},
		{ImportPath: module + "shared/integration", Imports: []string{module + "shared/outbound"}},
		{ImportPath: module + "shared/netpolicy", Imports: []string{module + "shared/apperr"}},
		{ImportPath: module + "shared/keyrange", Imports: []string{module + "shared/search"}},
		{ImportPath: module + "functions/sync", Imports: []string{"net/http"}},
	}
	for _, p := range cases {
		if len(violations(p)) == 0 {
			t.Errorf("%s importing %v is not caught", p.ImportPath, p.Imports)
		}
	}
	if v := violations(pkg{ImportPath: module + "infra/bench", Imports: []string{module + "shared/dynamo"}}); len(v) != 0 {
		t.Errorf("infra importing shared is allowed, got %v", v)
	}
}

// sides says which packages each side's functions must not link: the
// tracker's functions never link the wiki's stores, planner and services,
// and the wiki's never link the tracker's.
var sides = []struct {
	side      string
	functions func(dir string) bool
	never     []string
}{
	{"tracker", func(dir string) bool { return strings.HasPrefix(dir, "functions/tracker") },
		[]string{"shared/dynamo/wikitable", "shared/wiki", "shared/search", "shared/baseline", "shared/integration", "shared/query"}},
	{"wiki", func(dir string) bool { return !strings.HasPrefix(dir, "functions/tracker") },
		[]string{"shared/dynamo/trackertable", "shared/tracker"}},
}

// TestFunctionsLinkOnlyTheirSide fails when a function of template.yaml
// links the other side's stores or services (go list -deps).
func TestFunctionsLinkOnlyTheirSide(t *testing.T) {
	root, err := localaws.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := samtemplate.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, fn := range tpl.Functions {
		cmd := exec.Command("go", "list", "-deps", "./"+fn.Dir())
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", fn.Dir(), err)
		}
		deps := strings.Fields(string(out))
		for _, sd := range sides {
			if !sd.functions(fn.Dir()) {
				continue
			}
			count[sd.side]++
			for _, never := range sd.never {
				if slices.Contains(deps, module+never) {
					t.Errorf("%s (%s, the %s's) links %s", fn.LogicalID, fn.Dir(), sd.side, never)
				}
			}
		}
	}
	if count["tracker"] < 3 || count["wiki"] < 5 {
		t.Fatalf("functions checked per side %v: template.yaml not read", count)
	}
	t.Logf("functions checked per side: %v", count)
}
