// Package browsertest drives the wiki's web pages in a real browser: a
// headless Chromium (Debian's chromium package, which `make test`
// installs when it is missing) controlled from Go with chromedp, against
// a local stack running every function's real bootstrap. Its test logs in
// as a user would, opens a requirement's page, follows a dependency link
// and a link of the traceability graph, opens the space's diff and
// coverage pages from its navigation, signs out, and saves screenshots
// in the test's artifact directory (`go test -artifacts`; make test keeps
// them under .build/test-output).
package browsertest
