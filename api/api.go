// Package api holds the OpenAPI 3.1 document of herald's HTTP API,
// openapi.json, which package httpapi serves at GET /v1/openapi.json.
//
// The document is written by hand. The tests keep it true: those of
// package httpapi check it against the router (every route documented,
// every documented route served) and validate the answers of their real
// requests against its schemas; those of this package check that it is a
// valid OpenAPI 3.1 document.
package api

import (
	"bytes"
	_ "embed" // the document
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API, as JSON: a
// copy, which the caller may keep and change.
func OpenAPI() []byte { return bytes.Clone(openAPI) }
