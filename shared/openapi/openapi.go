// Package openapi embeds the OpenAPI 3 documents of the two HTTP APIs and
// serves them at GET /rest/reqs/1/openapi (anonymous). Every route a router
// declares must appear in its document; a test checks both ways.
package openapi

import (
	_ "embed"
	"net/http"
)

// Wiki is the OpenAPI document of the wiki API.
//
//go:embed wiki.yaml
var Wiki []byte

// Tracker is the OpenAPI document of the issue-tracker API.
//
//go:embed tracker.yaml
var Tracker []byte

// Handler serves doc as YAML.
func Handler(doc []byte) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, err := w.Write(doc)
		return err
	}
}
