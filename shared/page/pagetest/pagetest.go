// Package pagetest builds storage-format fragments for tests, so that test
// pages stay readable. It imports nothing of reqtrace, so the page
// package's own tests and every package above it can use it.
package pagetest

import "strings"

// Def is a requirement definition macro without a type parameter
// (DEFINITION is the default).
func Def(key string) string {
	return `<ac:structured-macro ac:name="requirement" ac:schema-version="1">` +
		`<ac:parameter ac:name="key">` + key + `</ac:parameter></ac:structured-macro>`
}

// Link is a requirement LINK macro; space "" leaves out spaceKey.
func Link(space, key string) string {
	s := `<ac:structured-macro ac:name="requirement">`
	if space != "" {
		s += `<ac:parameter ac:name="spaceKey">` + space + `</ac:parameter>`
	}
	return s + `<ac:parameter ac:name="type">LINK</ac:parameter>` +
		`<ac:parameter ac:name="key">` + key + `</ac:parameter></ac:structured-macro>`
}

// Jira is an issue macro; server "" leaves out serverId.
func Jira(key, server string) string {
	s := `<ac:structured-macro ac:name="jira">`
	if server != "" {
		s += `<ac:parameter ac:name="serverId">` + server + `</ac:parameter>`
	}
	return s + `<ac:parameter ac:name="key">` + key + `</ac:parameter></ac:structured-macro>`
}

// Option is a requirement-property macro with option=true (title, ignore).
func Option(name string) string {
	return `<ac:structured-macro ac:name="requirement-property">` +
		`<ac:parameter ac:name="` + name + `">true</ac:parameter></ac:structured-macro>`
}

// Table wraps rows in a table.
func Table(rows ...string) string {
	return "<table><tbody>" + strings.Join(rows, "") + "</tbody></table>"
}

// TH is a header row.
func TH(cells ...string) string { return row("th", cells) }

// TR is a row of data cells.
func TR(cells ...string) string { return row("td", cells) }

func row(tag string, cells []string) string {
	var b strings.Builder
	b.WriteString("<tr>")
	for _, c := range cells {
		b.WriteString("<" + tag + ">" + c + "</" + tag + ">")
	}
	b.WriteString("</tr>")
	return b.String()
}
