// Package functions_test checks that the three descriptions of the HTTP
// routes agree both ways: the HttpApi events of template.yaml (what API
// Gateway routes to each function), the routers the functions serve, and
// the OpenAPI documents published at GET /rest/reqs/1/openapi.
package functions_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/infra/samtemplate"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerlinks"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikibaselines"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikicontent"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikiintegrations"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikirequirements"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikiweb"
	"github.com/reqtrace/reqtrace/shared/openapi"
)

type registrar interface{ Register(*httpapi.Router) }

// groups maps each HTTP function of template.yaml to its route group; the
// functions' main.go files register exactly these.
var groups = map[string]struct {
	app   auth.App
	group registrar
}{
	"WikiRequirements":   {auth.Wiki, &wikirequirements.Handler{}},
	"WikiWeb":            {auth.Wiki, &wikiweb.Handler{}},
	"WikiContent":        {auth.Wiki, &wikicontent.Handler{}},
	"WikiBaselines":      {auth.Wiki, &wikibaselines.Handler{}},
	"WikiIntegrations":   {auth.Wiki, &wikiintegrations.Handler{}},
	"TrackerApiFunction": {auth.Tracker, &trackerapi.Handler{}},
	"TrackerLinks":       {auth.Tracker, &trackerlinks.Handler{}},
}

func TestTemplateRoutersAndOpenAPIAgree(t *testing.T) {
	tmpl, err := samtemplate.Load(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fromTemplate := map[string][]string{} // API -> "METHOD path"
	defaults := map[string][]string{}     // API -> functions serving $default
	for _, fn := range tmpl.Functions {
		var declared []string
		for _, r := range fn.Routes {
			if r.Path == samtemplate.DefaultRoute {
				defaults[r.API] = append(defaults[r.API], fn.LogicalID)
				continue
			}
			declared = append(declared, r.Method+" "+r.Path)
			fromTemplate[r.API] = append(fromTemplate[r.API], r.Method+" "+r.Path)
		}
		g, ok := groups[fn.LogicalID]
		if len(declared) == 0 {
			if ok {
				t.Errorf("%s has a route group but no HttpApi events", fn.LogicalID)
			}
			continue
		}
		if !ok {
			t.Errorf("%s declares routes but has no route group", fn.LogicalID)
			continue
		}
		rt := httpapi.NewRouter(g.app, nil)
		g.group.Register(rt)
		var served []string
		for _, r := range rt.Routes() {
			served = append(served, r.Method+" "+r.Path)
		}
		diff(t, fn.LogicalID+": template.yaml", declared, "router", served)
	}
	for api, doc := range map[string][]byte{"WikiApi": openapi.Wiki, "TrackerApi": openapi.Tracker} {
		diff(t, api+": template.yaml", fromTemplate[api], "OpenAPI", openAPIRoutes(t, doc))
		if len(defaults[api]) != 1 {
			t.Errorf("%s: $default route served by %v, want exactly one function", api, defaults[api])
		}
	}
}

// TestDefaultRouteAnswersJSON checks what the $default route's function
// answers for requests no route matches: the JSON 404, or 405 with Allow
// for a known path and another method, to a caller with a valid token; a
// caller without one gets 401 first, except on a path whose every route is
// anonymous (the OpenAPI document).
func TestDefaultRouteAnswersJSON(t *testing.T) {
	for _, name := range []string{"WikiRequirements", "TrackerApiFunction"} {
		g := groups[name]
		tokens := httpapitest.Tokens{"valid": {Tenant: "demo", App: g.app, Kind: auth.User, User: "u"}}
		rt := httpapi.NewRouter(g.app, auth.NewAuthenticator(tokens, time.Minute))
		g.group.Register(rt)
		for _, c := range []struct {
			path, token string
			want        int
		}{
			{"/nowhere", "valid", 404}, {"/rest/reqs/2/api", "valid", 404}, {"/rest/reqs/1/openapi", "valid", 405},
			{"/nowhere", "", 401}, {"/rest/reqs/2/api", "", 401}, {"/rest/reqs/1/openapi", "", 405},
			{"/nowhere", "bogus", 401}, {"/rest/reqs/1/openapi", "bogus", 401},
		} {
			rec := httpapitest.Do(rt, "PATCH", c.path, c.token, "", "")
			var body httpapi.ErrorBody
			if rec.Code != c.want || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Status != c.want {
				t.Errorf("%s: PATCH %s with token %q = %d %s, want JSON %d", name, c.path, c.token, rec.Code, rec.Body, c.want)
			}
		}
	}
}

func openAPIRoutes(t *testing.T, doc []byte) []string {
	t.Helper()
	var d struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(doc, &d); err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	if !strings.HasPrefix(d.OpenAPI, "3.") {
		t.Fatalf("not OpenAPI 3: %q", d.OpenAPI)
	}
	var routes []string
	for path, ops := range d.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				routes = append(routes, strings.ToUpper(method)+" "+path)
			}
		}
	}
	return routes
}

func diff(t *testing.T, aName string, a []string, bName string, b []string) {
	t.Helper()
	for _, r := range a {
		if !slices.Contains(b, r) {
			t.Errorf("%s has %q, %s does not", aName, r, bName)
		}
	}
	for _, r := range b {
		if !slices.Contains(a, r) {
			t.Errorf("%s has %q, %s does not", bName, r, aName)
		}
	}
}
