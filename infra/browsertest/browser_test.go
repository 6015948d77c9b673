package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/reqtrace/reqtrace/infra/localstack"
	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/page/pagetest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// chromiumFlags are the switches the browser needs on a machine without
// internet access and without a display: no sandbox (root in a
// container), no GPU, no QUIC, and none of the background traffic a
// first run, updates or sync would start.
func chromiumOptions(t *testing.T) []chromedp.ExecAllocatorOption {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (make test installs Debian's chromium package): %v", err)
	}
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
}

func startStack(t *testing.T) *localstack.Stack {
	t.Helper()
	env := testenv.AWS(t)
	st, err := localstack.Start(context.Background(), localstack.Options{
		BuildDir: testenv.Bootstraps(t), WikiAddr: "127.0.0.1:0", TrackerAddr: "127.0.0.1:0",
		SyncInterval: -1, DynamoDBEndpoint: env.DynamoDBEndpoint, SQSEndpoint: env.SQSEndpoint,
		Prefix: testenv.Prefix("browser"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		FunctionLog: io.Discard, Functions: []string{"WikiWeb", "WikiRequirements", "WikiContent", "WikiBaselines"},
	})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close stack: %v", err)
		}
	})
	return st
}

// savePage stores a wiki page through the content API, as a wiki does.
func savePage(t *testing.T, base, id, space, title, body string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"spaceKey": space, "title": title, "body": body})
	send(t, http.MethodPut, base+"/rest/reqs/1/content/"+id, string(b))
}

// saveSpecs saves page 100 of DEMO: REQ-001 depends on REQ-000 and
// implements PROJ-1 (its text hostile), REQ-002 depends on REQ-001; the
// texts of REQ-000 and REQ-002 are given.
func saveSpecs(t *testing.T, base, req000, req002 string) {
	t.Helper()
	savePage(t, base, "100", "DEMO", "Specs", pagetest.Table(
		pagetest.TH("Key", "Description", "Depends on", "Implements"),
		pagetest.TR(pagetest.Def("REQ-001"), "<p>The system shall log in users. &lt;script&gt;alert(1)&lt;/script&gt;</p>",
			pagetest.Link("", "REQ-000"), pagetest.Jira("PROJ-1", "jira-1")),
		pagetest.TR(pagetest.Def("REQ-000"), "<p>"+req000+"</p>", "", ""),
		pagetest.TR(pagetest.Def("REQ-002"), "<p>"+req002+"</p>", pagetest.Link("", "REQ-001"), ""),
	))
}

// post sends a JSON POST as the wiki's admin and wants 200.
func post(t *testing.T, url, body string) {
	t.Helper()
	send(t, http.MethodPost, url, body)
}

// send sends a JSON request as the wiki's admin and wants 200.
func send(t *testing.T, method, url, body string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer demo-wiki-admin")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		out, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, out)
	}
}

// downloaded waits for the browser's download to complete and returns the
// file, which the browser saved in dir under the download's GUID.
func downloaded(t *testing.T, progress iter.Seq2[browser.EventDownloadProgress, error], dir string) string {
	t.Helper()
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("download: %v", err)
		}
		switch ev.State {
		case browser.DownloadProgressStateCanceled:
			t.Fatalf("download %s canceled", ev.GUID)
		case browser.DownloadProgressStateCompleted:
			b, err := os.ReadFile(filepath.Join(dir, ev.GUID))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatal("no download completed")
	return ""
}

// TestBrowserLoginRequirementAndDependency is a user's visit: a link to a
// requirement leads to the login, the login back to the requirement,
// whose page shows its text, links and graph; a dependency link and a
// graph node open the linked requirements; the space's navigation opens
// its diff and coverage pages, and the coverage's CSV link downloads the
// matrix; signing out ends the session.
func TestBrowserLoginRequirementAndDependency(t *testing.T) {
	st := startStack(t)
	saveSpecs(t, st.WikiURL, "Users exist.", "Sessions expire.")

	ctx, cancel := chromedp.NewExecAllocator(t.Context(), chromiumOptions(t)...)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx, chromedp.WithErrorf(t.Logf))
	defer cancel()
	if err := chromedp.Do(ctx); err != nil { // start the browser on the uncancelled context
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	shots := t.ArtifactDir()
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	get := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	count := func(selector string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int]("document.querySelectorAll("+strconv.Quote(selector)+").length"))
		if err != nil {
			t.Fatalf("count %s: %v", selector, err)
		}
		return n
	}
	// at waits until the browser shows path: a click starts a navigation
	// that the next step must not overtake.
	at := func(path string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			for {
				loc, err := chromedp.Location()(ctx, tg)
				if err == nil && strings.HasSuffix(loc, path) {
					_, err := chromedp.WaitVisible(chromedp.CSS("main h1"))(ctx, tg)
					return err
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("waiting for %s (at %s): %w", path, loc, ctx.Err())
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
	reqURL := st.WikiURL + "/requirements/DEMO/REQ-001"

	// Without a session the link leads to the login form.
	run("open the requirement", chromedp.Navigate(reqURL), chromedp.WaitVisible(chromedp.CSS("#token")), shot("login.png"))
	if loc, want := get("location", chromedp.Location()), st.WikiURL+"/login?next=%2Frequirements%2FDEMO%2FREQ-001"; loc != want {
		t.Errorf("without a session: at %s, want %s", loc, want)
	}

	// Signing in leads back to the requirement.
	run("sign in",
		chromedp.SendKeys(chromedp.CSS("#token"), "demo-wiki-user"),
		chromedp.Click(chromedp.CSS("form.login button")),
		at("/requirements/DEMO/REQ-001"),
		shot("requirement.png"))
	if loc, key := get("location", chromedp.Location()), get("key", chromedp.Text(chromedp.CSS("h1 .key"))); loc != reqURL || key != "REQ-001" {
		t.Errorf("after the login: at %s showing %q, want %s showing REQ-001", loc, key, reqURL)
	}
	if excerpt, scripts := get("excerpt", chromedp.Text(chromedp.CSS(".excerpt"))), count("script"); !strings.Contains(excerpt, "<script>alert(1)</script>") || scripts != 0 {
		t.Errorf("hostile text: excerpt %q and %d script elements, want the text shown and no script", excerpt, scripts)
	}
	if n := count("section.graph svg a.node"); n != 3 { // REQ-001, REQ-000 and REQ-002 (an issue is no link)
		t.Errorf("graph: %d requirement nodes, want 3", n)
	}
	// The served stylesheet applies under the Content-Security-Policy.
	bg, err := chromedp.Run(ctx, chromedp.Evaluate[string]("getComputedStyle(document.querySelector('header.top')).backgroundColor"))
	if err != nil || bg != "rgb(22, 36, 59)" {
		t.Errorf("stylesheet not applied: header background %q (%v)", bg, err)
	}

	// The session cookie: HttpOnly, SameSite=Strict, no token in it.
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{st.WikiURL}})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Cookies; len(c) != 1 || c[0].Name != "reqtrace_session" || !c[0].HTTPOnly ||
		c[0].SameSite != network.CookieSameSiteStrict || strings.Contains(c[0].Value, "demo-wiki-user") {
		t.Errorf("cookies %+v, want one HttpOnly SameSite=Strict reqtrace_session without the token", c)
	}

	// A dependency link opens the dependency's page; its graph links on.
	run("follow the dependency link",
		chromedp.Click(chromedp.CSS(`section.links a[href="/requirements/DEMO/REQ-000"]`)),
		at("/requirements/DEMO/REQ-000"),
		shot("dependency.png"))
	if loc, key := get("location", chromedp.Location()), get("key", chromedp.Text(chromedp.CSS("h1 .key"))); !strings.HasSuffix(loc, "/requirements/DEMO/REQ-000") || key != "REQ-000" {
		t.Errorf("after the dependency link: at %s showing %q, want REQ-000", loc, key)
	}
	run("follow a link of the graph",
		chromedp.Click(chromedp.CSS(`section.graph svg a[href="/requirements/DEMO/REQ-002"]`)),
		at("/requirements/DEMO/REQ-002"),
		shot("graph-link.png"))
	if key := get("key", chromedp.Text(chromedp.CSS("h1 .key"))); key != "REQ-002" {
		t.Errorf("after the graph link: showing %q, want REQ-002 (two levels from REQ-000)", key)
	}

	// The space's diff page, from its navigation bar: a baseline, then a
	// change of REQ-002's text.
	post(t, st.WikiURL+"/rest/reqs/1/baseline/DEMO/1/create-instant", `{"name":"Release 1","fromCeo":"100"}`)
	saveSpecs(t, st.WikiURL, "Users exist.", "Sessions expire after an hour.")
	run("open the diff page",
		chromedp.Click(chromedp.CSS(`nav[aria-label="space"] a[href="/diff/DEMO"]`)),
		at("/diff/DEMO"),
		chromedp.SendKeys(chromedp.CSS("#from"), "1"),
		chromedp.SendKeys(chromedp.CSS("#to"), "current"),
		chromedp.Click(chromedp.CSS("form.jump button")),
		chromedp.WaitVisible(chromedp.CSS("table.diff")),
		shot("diff.png"))
	if summary := get("summary", chromedp.Text(chromedp.CSS("p.summary"))); !strings.Contains(summary, "1 modified") {
		t.Errorf("the diff's summary %q, want 1 modified", summary)
	}

	// The space's coverage page, from its navigation bar, once REQ-000's
	// text changed (REQ-001's link to it turns suspect).
	saveSpecs(t, st.WikiURL, "Users exist, each with a password.", "Sessions expire after an hour.")
	run("open the coverage page",
		chromedp.Click(chromedp.CSS(`nav[aria-label="space"] a[href="/coverage/DEMO"]`)),
		at("/coverage/DEMO"),
		chromedp.WaitVisible(chromedp.CSS("table.coverage")),
		shot("coverage.png"))
	if summary := get("summary", chromedp.Text(chromedp.CSS("p.summary"))); !strings.Contains(summary, "jira: 1/3 covered") ||
		!strings.Contains(summary, "to: 2/3 covered") || !strings.Contains(summary, "from: 2/3 covered") {
		t.Errorf("the coverage's summary %q", summary)
	}
	if gaps, suspect := count("table.coverage td.gap"), count("table.coverage .item.suspect"); gaps != 4 || suspect != 1 {
		t.Errorf("coverage: %d gaps and %d suspect items, want 4 and 1", gaps, suspect)
	}

	// The CSV link is WikiRequirements' route: the browser sends the
	// session cookie (SameSite=Strict, the link is the wiki's own) and
	// follows the 303 to the export, which it saves as a file.
	downloads := t.TempDir()
	progress := chromedp.Events(ctx, browser.DownloadProgress)
	run("download the coverage as CSV",
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: downloads, EventsEnabled: new(true)})
			return err
		}),
		chromedp.Click(chromedp.CSS("a.csv")))
	if csv := downloaded(t, progress, downloads); !strings.HasPrefix(csv, "spaceKey,key,text,jira,to,from\r\n") ||
		!strings.Contains(csv, "DEMO,REQ-001,") {
		t.Errorf("the coverage's CSV download: %.300q", csv)
	}

	// Signing out ends the session: the page leads to the login again.
	run("sign out",
		chromedp.Click(chromedp.CSS("form.who button")),
		at("/login"),
		chromedp.Navigate(reqURL),
		chromedp.WaitVisible(chromedp.CSS("#token")))
	if loc := get("location", chromedp.Location()); !strings.Contains(loc, "/login?next=") {
		t.Errorf("after signing out: at %s, want the login", loc)
	}
	t.Logf("screenshots in %s", shots)
}
