// Package openapitest checks herald's OpenAPI document (package api) for
// the tests: that it is a valid OpenAPI 3.1 document, which routes it
// documents, and whether a request and its answer are what it says. The
// schemas are JSON Schema 2020-12, validated by
// github.com/santhosh-tekuri/jsonschema/v6 with formats (date-time, uuid,
// uri) and contents (base64) asserted.
//
// The answers are checked strictly: an object in an answer may have only
// the properties its schema names, so that a field added to an answer
// without its documentation fails the tests. The document does not say so
// itself (clients may then take fields it does not know yet); Parse adds
// unevaluatedProperties false to every schema of the document that names
// properties, refers to another or combines others with allOf, except the
// components' own definitions (which other schemas extend) and the members
// of allOf, anyOf and oneOf. Such a field is reported as "false schema" at
// its location.
package openapitest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/heraldmq/herald/api"
)

// docURL names the document for the schema compiler.
const docURL = "https://herald.invalid/openapi.json"

// methods are the operations of a path item, in the order they are listed.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Doc is an OpenAPI document ready to check requests and answers against.
type Doc struct {
	raw      map[string]any
	ops      []*Operation
	mux      *http.ServeMux
	compiler *jsonschema.Compiler

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema // by JSON pointer
}

// Operation is one documented path and method.
type Operation struct {
	// Method is upper case: "GET".
	Method string
	// Path is as documented: "/v1/messages/{id}".
	Path string
	// ID is the operationId.
	ID string
	// Handler serves it: "httpapi", unless the operation's
	// x-herald-handler names another ("ui").
	Handler string

	ptr      string         // JSON pointer of the operation object
	obj      map[string]any // the operation object
	params   []param        // the path item's and the operation's, resolved
	security any            // the operation's security, or else the document's
}

// param is a resolved parameter object.
type param struct {
	name, in string
	required bool
	ptr      string // JSON pointer of the parameter object
}

// Pattern is o as a net/http pattern: "GET /v1/messages/{id}".
func (o *Operation) Pattern() string { return o.Method + " " + o.Path }

var loaded = sync.OnceValues(func() (*Doc, error) { return Parse(api.OpenAPI()) })

// Load returns package api's document, parsed once.
func Load() (*Doc, error) { return loaded() }

// Parse parses an OpenAPI document.
func Parse(data []byte) (*Doc, error) {
	if err := duplicateKeys(data); err != nil {
		return nil, err
	}
	raw, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("the document: %w", err)
	}
	doc, ok := raw.(map[string]any)
	if !ok {
		return nil, errors.New("the document is not a JSON object")
	}
	strict, err := decode(data) // a copy to change
	if err != nil {
		return nil, err
	}
	walkSchemas(strict.(map[string]any), makeStrict)

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	c.RegisterContentEncoding(&jsonschema.Decoder{Name: "base64", Decode: decodeBase64})
	if err := c.AddResource(docURL, strict); err != nil {
		return nil, err
	}
	d := &Doc{raw: doc, mux: http.NewServeMux(), compiler: c, schemas: map[string]*jsonschema.Schema{}}
	if err := d.readOperations(); err != nil {
		return nil, err
	}
	return d, nil
}

// decodeBase64 decodes standard base64, padded or not, as the API does.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return base64.RawStdEncoding.DecodeString(s)
	}
	return b, nil
}

// decode reads JSON as the schema compiler and validator want it (numbers
// as json.Number).
func decode(data []byte) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

// readOperations lists the operations of every path and registers their
// patterns on d.mux, which then tells the operation of a request.
func (d *Doc) readOperations() (err error) {
	paths, _ := d.raw["paths"].(map[string]any)
	for _, path := range sortedKeys(paths) {
		item, _ := paths[path].(map[string]any)
		itemPtr := "/paths/" + escape(path)
		shared, err := d.params(item["parameters"], itemPtr+"/parameters")
		if err != nil {
			return err
		}
		for _, m := range methods {
			obj, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			op := &Operation{Method: strings.ToUpper(m), Path: path, Handler: "httpapi", ptr: itemPtr + "/" + m, obj: obj}
			op.ID, _ = obj["operationId"].(string)
			op.security, ok = obj["security"]
			if !ok {
				op.security = d.raw["security"]
			}
			if h, ok := obj["x-herald-handler"].(string); ok {
				op.Handler = h
			}
			own, err := d.params(obj["parameters"], op.ptr+"/parameters")
			if err != nil {
				return err
			}
			op.params = mergeParams(shared, own)
			if err := register(d.mux, op.Pattern()); err != nil {
				return err
			}
			d.ops = append(d.ops, op)
		}
	}
	return nil
}

// register registers pattern on mux, or says why it cannot.
func register(mux *http.ServeMux, pattern string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("documented path %q: %v", pattern, r)
		}
	}()
	mux.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {})
	return nil
}

// params resolves the parameters list v found at ptr.
func (d *Doc) params(v any, ptr string) ([]param, error) {
	list, _ := v.([]any)
	var out []param
	for i, p := range list {
		obj, at, err := d.resolve(p, ptr+"/"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		name, _ := obj["name"].(string)
		in, _ := obj["in"].(string)
		required, _ := obj["required"].(bool)
		out = append(out, param{name: name, in: in, required: required, ptr: at})
	}
	return out, nil
}

// mergeParams is the path item's parameters with those of the operation
// in place of any of the same name and location.
func mergeParams(shared, own []param) []param {
	out := slices.Clone(own)
	for _, p := range shared {
		if !slices.ContainsFunc(own, func(o param) bool { return o.name == p.name && o.in == p.in }) {
			out = append(out, p)
		}
	}
	return out
}

// resolve follows v's $ref, if it has one, within the document, and
// returns the object and its JSON pointer (ptr, where v is, when it has no
// $ref).
func (d *Doc) resolve(v any, ptr string) (map[string]any, string, error) {
	for range 10 {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, "", fmt.Errorf("%s: not an object", ptr)
		}
		ref, ok := obj["$ref"].(string)
		if !ok {
			return obj, ptr, nil
		}
		target, ok := strings.CutPrefix(ref, "#")
		if !ok {
			return nil, "", fmt.Errorf("%s: $ref %q is not within the document", ptr, ref)
		}
		if v, ok = lookup(d.raw, target); !ok {
			return nil, "", fmt.Errorf("%s: $ref %q leads nowhere", ptr, ref)
		}
		ptr = target
	}
	return nil, "", fmt.Errorf("%s: $ref loops", ptr)
}

// lookup returns the value at the JSON pointer ptr of v.
func lookup(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// escape escapes a JSON pointer token.
func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// Operations returns the documented operations, by path, then method.
func (d *Doc) Operations() []*Operation { return slices.Clone(d.ops) }

// Match returns the operation that serves method and path, as net/http's
// mux would route them to the documented patterns.
func (d *Doc) Match(method, path string) (*Operation, bool) {
	_, pattern := d.mux.Handler(&http.Request{Method: method, URL: &url.URL{Path: path}, Host: "herald"})
	if pattern == "" {
		return nil, false
	}
	for _, op := range d.ops {
		if op.Pattern() == pattern {
			return op, true
		}
	}
	return nil, false
}

// RouteProblems compares served, the patterns ("METHOD /path") that a
// router of handler serves, with the operations the document says handler
// serves: each one served and undocumented, and each one documented and
// not served, is a problem.
func (d *Doc) RouteProblems(handler string, served []string) []string {
	var problems []string
	documented := map[string]bool{}
	for _, op := range d.ops {
		if op.Handler == handler {
			documented[op.Pattern()] = true
		}
	}
	for _, p := range served {
		if !documented[p] {
			problems = append(problems, fmt.Sprintf("%s is served by %s but not documented in api/openapi.json", p, handler))
		}
	}
	for _, op := range d.ops {
		if op.Handler == handler && !slices.Contains(served, op.Pattern()) {
			problems = append(problems, fmt.Sprintf("%s is documented in api/openapi.json but %s does not serve it", op.Pattern(), handler))
		}
	}
	return problems
}

// schema compiles, once, the schema at the JSON pointer ptr.
func (d *Doc) schema(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[ptr]; ok {
		return s, nil
	}
	s, err := d.compiler.Compile(docURL + "#" + ptr)
	if err != nil {
		return nil, fmt.Errorf("compiling the schema at %s: %w", ptr, err)
	}
	d.schemas[ptr] = s
	return s, nil
}

// validate validates the JSON data against the schema at ptr.
func (d *Doc) validate(ptr string, data []byte) error {
	s, err := d.schema(ptr)
	if err != nil {
		return err
	}
	v, err := decode(data)
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(v)
}

// Exchange is a request and its answer.
type Exchange struct {
	Method string
	URL    *url.URL
	Header http.Header
	Body   []byte

	Status       int
	AnswerHeader http.Header
	Answer       []byte
}

// Check checks ex against the document and returns the operation that ex
// matched (nil when none did). An answer must be one the operation lists,
// with the headers it requires and a body of a documented media type that
// its schema validates. A request answered 2xx must have been one the
// operation takes: only its query parameters, with valid values, and a body
// its schema validates; a request refused may be anything. A request that
// matches no operation must be answered with the error shape (401, 403,
// 404 or 405).
func (d *Doc) Check(ex Exchange) (*Operation, error) {
	op, ok := d.Match(ex.Method, ex.URL.Path)
	if !ok {
		return nil, d.checkUnmatched(ex)
	}
	where := fmt.Sprintf("%s %s (%s) answered %d", ex.Method, ex.URL.Path, op.Pattern(), ex.Status)
	if err := d.checkAnswer(op, ex); err != nil {
		return op, fmt.Errorf("%s: %w%s\nbody: %s", where, err, hint(err), ex.Answer)
	}
	if ex.Status >= 200 && ex.Status < 300 {
		if err := d.checkRequest(op, ex); err != nil {
			return op, fmt.Errorf("%s to a request the document does not take: %w\nrequest body: %s", where, err, ex.Body)
		}
	}
	return op, nil
}

// checkUnmatched checks the answer of a request that no operation serves.
func (d *Doc) checkUnmatched(ex Exchange) error {
	switch ex.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed:
	default:
		return fmt.Errorf("%s %s matches no documented operation, yet was answered %d", ex.Method, ex.URL.Path, ex.Status)
	}
	if ex.Method == http.MethodHead {
		return nil
	}
	if err := d.validate("/components/schemas/Error", ex.Answer); err != nil {
		return fmt.Errorf("%s %s (no operation) answered %d: %w\nbody: %s", ex.Method, ex.URL.Path, ex.Status, err, ex.Answer)
	}
	return nil
}

// checkAnswer checks ex's answer against op.
func (d *Doc) checkAnswer(op *Operation, ex Exchange) error {
	responses, _ := op.obj["responses"].(map[string]any)
	status := strconv.Itoa(ex.Status)
	v, ok := responses[status]
	if !ok {
		return fmt.Errorf("the document lists no %s answer", status)
	}
	resp, ptr, err := d.resolve(v, op.ptr+"/responses/"+status)
	if err != nil {
		return err
	}
	headers, _ := resp["headers"].(map[string]any)
	for _, name := range sortedKeys(headers) {
		h, _, err := d.resolve(headers[name], ptr+"/headers/"+escape(name))
		if err != nil {
			return err
		}
		if req, _ := h["required"].(bool); req && ex.AnswerHeader.Get(name) == "" {
			return fmt.Errorf("no %s header, which the document requires", name)
		}
	}
	content, _ := resp["content"].(map[string]any)
	if len(ex.Answer) == 0 {
		if len(content) > 0 && ex.Method != http.MethodHead {
			return errors.New("no body, where the document describes one")
		}
		return nil
	}
	if len(content) == 0 {
		return errors.New("a body, where the document describes none")
	}
	mt, _, err := mime.ParseMediaType(ex.AnswerHeader.Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("Content-Type %q: %w", ex.AnswerHeader.Get("Content-Type"), err)
	}
	if _, ok := content[mt]; !ok {
		return fmt.Errorf("Content-Type %s, where the document has %v", mt, sortedKeys(content))
	}
	if !isJSON(mt) {
		return nil
	}
	return d.validate(ptr+"/content/"+escape(mt)+"/schema", ex.Answer)
}

// checkRequest checks ex's request against op.
func (d *Doc) checkRequest(op *Operation, ex Exchange) error {
	query := ex.URL.Query()
	for _, name := range sortedKeys(query) {
		i := slices.IndexFunc(op.params, func(p param) bool { return p.name == name && p.in == "query" })
		if i < 0 {
			return fmt.Errorf("query parameter %q is not documented", name)
		}
		for _, value := range query[name] {
			if err := d.validateParam(op.params[i].ptr+"/schema", value); err != nil {
				return fmt.Errorf("query parameter %s=%q: %w", name, value, err)
			}
		}
	}
	for _, p := range op.params {
		if p.in == "query" && p.required && !query.Has(p.name) {
			return fmt.Errorf("the required query parameter %q is absent", p.name)
		}
	}
	body, ptr, err := d.requestBody(op)
	if err != nil {
		return err
	}
	empty := len(bytes.TrimSpace(ex.Body)) == 0
	switch {
	case body == nil && !empty:
		return errors.New("a body, where the document takes none")
	case body == nil:
		return nil
	case empty:
		if req, _ := body["required"].(bool); req {
			return errors.New("no body, where the document requires one")
		}
		return nil
	}
	content, _ := body["content"].(map[string]any)
	mt := "application/json" // what the API reads a body without a Content-Type as
	if ct := ex.Header.Get("Content-Type"); ct != "" {
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return fmt.Errorf("Content-Type %q: %w", ct, err)
		}
	}
	if _, ok := content[mt]; !ok {
		return fmt.Errorf("a body of %s, where the document takes %v", mt, sortedKeys(content))
	}
	if !isJSON(mt) {
		return nil
	}
	return d.validate(ptr+"/content/"+escape(mt)+"/schema", ex.Body)
}

// requestBody returns op's request body object and its pointer; nil when
// op takes none.
func (d *Doc) requestBody(op *Operation) (map[string]any, string, error) {
	v, ok := op.obj["requestBody"]
	if !ok {
		return nil, "", nil
	}
	return d.resolve(v, op.ptr+"/requestBody")
}

// validateParam validates a parameter's value, a string, against the
// schema at ptr: as the string, or else as the number it spells.
func (d *Doc) validateParam(ptr, value string) error {
	s, err := d.schema(ptr)
	if err != nil {
		return err
	}
	err = s.Validate(value)
	if err == nil {
		return nil
	}
	if _, ferr := strconv.ParseFloat(value, 64); ferr == nil && s.Validate(json.Number(value)) == nil {
		return nil
	}
	return err
}

func isJSON(mediaType string) bool {
	return mediaType == "application/json" || strings.HasSuffix(mediaType, "+json")
}

// Handler serves next, checking each request and its answer against d:
// report gets the operation matched (nil for none), the status answered
// and the problem (nil for none).
func (d *Doc) Handler(next http.Handler, report func(op *Operation, status int, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		op, err := d.Check(Exchange{Method: r.Method, URL: r.URL, Header: r.Header, Body: body,
			Status: rec.Code, AnswerHeader: rec.Header(), Answer: rec.Body.Bytes()})
		report(op, rec.Code, err)
	})
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Lookup returns the value at the JSON pointer ptr of the document, as
// decoded (numbers as json.Number).
func (d *Doc) Lookup(ptr string) (any, bool) { return lookup(d.raw, ptr) }

// hint explains a validation error, when it needs it.
func hint(err error) string {
	if strings.Contains(err.Error(), "false schema") {
		return "\n(\"false schema\": a property that the document does not name; document it in api/openapi.json)"
	}
	return ""
}
