package httpapi

import (
	"net/http"

	apidoc "github.com/heraldmq/herald/api"
)

// openAPIPath is where the OpenAPI document is served, without a key.
const openAPIPath = "/v1/openapi.json"

// openAPIDoc is the document served: package api's, as committed.
var openAPIDoc = apidoc.OpenAPI()

// openAPI handles GET /v1/openapi.json: the API's OpenAPI 3.1 document.
func (a *api) openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc) // the client went away: nothing left to tell it
}
