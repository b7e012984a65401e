package openapitest

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// oas31 holds the official JSON Schemas of OpenAPI 3.1 documents (see
// oas3.1/README.md).
//
//go:embed oas3.1/*.json
var oas31 embed.FS

// metaSchemaURL is the schema of OpenAPI 3.1 documents whose Schema
// Objects use the OpenAPI dialect of JSON Schema 2020-12 (the default).
const metaSchemaURL = "https://spec.openapis.org/oas/3.1/schema-base/2022-10-07"

// ValidateOpenAPI31 validates data against the official JSON Schema of
// OpenAPI 3.1 documents (schema-base 2022-10-07): the document's structure,
// and every Schema Object in it against the OpenAPI dialect of JSON
// Schema 2020-12.
func ValidateOpenAPI31(data []byte) error {
	c := jsonschema.NewCompiler()
	files, err := fs.Glob(oas31, "oas3.1/*.json")
	if err != nil {
		return err
	}
	for _, name := range files {
		b, err := oas31.ReadFile(name)
		if err != nil {
			return err
		}
		v, err := decode(b)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		id, _ := v.(map[string]any)["$id"].(string)
		if err := c.AddResource(id, v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	meta, err := c.Compile(metaSchemaURL)
	if err != nil {
		return err
	}
	doc, err := decode(data)
	if err != nil {
		return err
	}
	return meta.Validate(doc)
}

// duplicateKeys returns an error naming the first key that an object of
// the JSON data has twice (encoding/json would keep the last silently).
func duplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var value func(at string) error
	value = func(at string) error {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("reading JSON at %q: %w", at, err)
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return fmt.Errorf("reading JSON at %q: %w", at, err)
				}
				key := k.(string)
				if seen[key] {
					return fmt.Errorf("the object at %q has the key %q twice", at, key)
				}
				seen[key] = true
				if err := value(at + "/" + escape(key)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := value(at + "/" + strconv.Itoa(i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := value(""); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the document")
	}
	return nil
}

// walkSchemas calls visit with every Schema Object of the OpenAPI
// document doc, outermost first, and whether it is open: a component's
// own definition, or a member of allOf, anyOf, oneOf, not or if, which
// other schemas combine and so must not refuse what they add.
func walkSchemas(doc map[string]any, visit func(s map[string]any, open bool)) {
	media := func(content any) {
		for _, mt := range objects(content) {
			walkSchema(mt["schema"], false, visit)
		}
	}
	headers := func(hs any) {
		for _, h := range objects(hs) {
			walkSchema(h["schema"], false, visit)
		}
	}
	params := func(ps any) {
		list, _ := ps.([]any)
		for _, p := range list {
			if obj, ok := p.(map[string]any); ok {
				walkSchema(obj["schema"], false, visit)
			}
		}
	}
	for _, item := range objects(doc["paths"]) {
		params(item["parameters"])
		for _, m := range methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			params(op["parameters"])
			if body, ok := op["requestBody"].(map[string]any); ok {
				media(body["content"])
			}
			for _, resp := range objects(op["responses"]) {
				media(resp["content"])
				headers(resp["headers"])
			}
		}
	}
	components, _ := doc["components"].(map[string]any)
	for _, s := range objects(components["schemas"]) {
		walkSchema(s, true, visit)
	}
	for _, p := range objects(components["parameters"]) {
		walkSchema(p["schema"], false, visit)
	}
	for _, r := range objects(components["responses"]) {
		media(r["content"])
		headers(r["headers"])
	}
	headers(components["headers"])
	for _, b := range objects(components["requestBodies"]) {
		media(b["content"])
	}
}

// walkSchema calls visit with the schema v, when it is an object, and
// every schema in it.
func walkSchema(v any, open bool, visit func(s map[string]any, open bool)) {
	s, ok := v.(map[string]any)
	if !ok {
		return
	}
	visit(s, open)
	for _, kw := range []string{"properties", "patternProperties", "$defs", "dependentSchemas"} {
		for _, sub := range objects(s[kw]) {
			walkSchema(sub, false, visit)
		}
	}
	for _, kw := range []string{"additionalProperties", "items", "contains", "then", "else", "propertyNames",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema"} {
		walkSchema(s[kw], false, visit)
	}
	for _, kw := range []string{"not", "if"} {
		walkSchema(s[kw], true, visit)
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		list, _ := s[kw].([]any)
		for _, sub := range list {
			walkSchema(sub, kw != "prefixItems", visit)
		}
	}
}

// makeStrict makes s, unless open, refuse the properties that neither it
// nor the schemas it refers to or combines with allOf name.
func makeStrict(s map[string]any, open bool) {
	if open {
		return
	}
	_, ref := s["$ref"]
	_, props := s["properties"]
	_, all := s["allOf"]
	_, additional := s["additionalProperties"]
	_, unevaluated := s["unevaluatedProperties"]
	if (ref || props || all) && !additional && !unevaluated {
		s["unevaluatedProperties"] = false
	}
}

// objects returns v's values that are objects, by key.
func objects(v any) map[string]map[string]any {
	m, _ := v.(map[string]any)
	out := make(map[string]map[string]any, len(m))
	for k, x := range m {
		if obj, ok := x.(map[string]any); ok {
			out[k] = obj
		}
	}
	return out
}

// pathParam matches a path template's parameters.
var pathParam = regexp.MustCompile(`\{([^}]*)\}`)

// Lint returns what is wrong with d beyond the OpenAPI schema's reach:
// an operation without a unique operationId or without a 2xx answer; a
// path parameter not declared, or declared and not in the path; a $ref
// that leads nowhere; a schema that does not compile; a JSON request body
// that takes unknown fields (the API refuses them: every object in it must
// say additionalProperties false); a request body without a 400 answer.
func (d *Doc) Lint() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	problems = append(problems, d.danglingRefs(d.raw, "")...)
	ids := map[string]string{}
	for _, op := range d.ops {
		p := op.Pattern()
		switch {
		case op.ID == "":
			add("%s has no operationId", p)
		case ids[op.ID] != "":
			add("%s and %s have the same operationId %q", ids[op.ID], p, op.ID)
		default:
			ids[op.ID] = p
		}
		var inPath []string
		for _, m := range pathParam.FindAllStringSubmatch(op.Path, -1) {
			inPath = append(inPath, m[1])
			i := slices.IndexFunc(op.params, func(x param) bool { return x.in == "path" && x.name == m[1] })
			if i < 0 || !op.params[i].required {
				add("%s: the path parameter %q is not declared (in: path, required: true)", p, m[1])
			}
		}
		for _, x := range op.params {
			if x.in == "path" && !slices.Contains(inPath, x.name) {
				add("%s: declares the path parameter %q, which is not in the path", p, x.name)
			}
			if _, err := d.schema(x.ptr + "/schema"); err != nil {
				add("%s: parameter %s: %v", p, x.name, err)
			}
		}
		responses, _ := op.obj["responses"].(map[string]any)
		if !slices.ContainsFunc(sortedKeys(responses), func(s string) bool { return strings.HasPrefix(s, "2") || s == "303" }) {
			add("%s lists no success answer", p)
		}
		for _, status := range sortedKeys(responses) {
			resp, ptr, err := d.resolve(responses[status], op.ptr+"/responses/"+status)
			if err != nil {
				add("%s: %v", p, err)
				continue
			}
			for _, mt := range sortedKeys(objects(resp["content"])) {
				if _, err := d.schema(ptr + "/content/" + escape(mt) + "/schema"); err != nil {
					add("%s %s %s: %v", p, status, mt, err)
				}
			}
		}
		body, ptr, err := d.requestBody(op)
		if err != nil {
			add("%s: %v", p, err)
			continue
		}
		if body == nil {
			continue
		}
		if _, ok := responses["400"]; !ok && op.Handler == "httpapi" {
			add("%s takes a body but lists no 400 answer", p)
		}
		for _, mt := range sortedKeys(objects(body["content"])) {
			sptr := ptr + "/content/" + escape(mt) + "/schema"
			if _, err := d.schema(sptr); err != nil {
				add("%s request %s: %v", p, mt, err)
				continue
			}
			if isJSON(mt) && op.Handler == "httpapi" {
				s, _ := lookup(d.raw, sptr)
				for _, where := range d.openObjects(s, sptr, map[string]bool{}) {
					add("%s request body: the object at %s takes unknown fields; the API refuses them (additionalProperties: false)", p, where)
				}
			}
		}
	}
	return problems
}

// openObjects returns where, in the schema v at ptr, an object schema with
// properties does not refuse others.
func (d *Doc) openObjects(v any, ptr string, seen map[string]bool) []string {
	s, at, err := d.resolve(v, ptr)
	if err != nil || seen[at] {
		return nil
	}
	seen[at] = true
	var out []string
	if props, ok := s["properties"].(map[string]any); ok {
		if s["additionalProperties"] != false {
			out = append(out, at)
		}
		for _, name := range sortedKeys(props) {
			out = append(out, d.openObjects(props[name], at+"/properties/"+escape(name), seen)...)
		}
	}
	if items, ok := s["items"]; ok {
		out = append(out, d.openObjects(items, at+"/items", seen)...)
	}
	members, _ := s["allOf"].([]any)
	for i, m := range members {
		out = append(out, d.openObjects(m, at+"/allOf/"+strconv.Itoa(i), seen)...)
	}
	return out
}

// danglingRefs returns each $ref within v (at ptr) that leads nowhere in
// the document.
func (d *Doc) danglingRefs(v any, ptr string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			target, local := strings.CutPrefix(ref, "#")
			if _, found := lookup(d.raw, target); !local || !found {
				out = append(out, fmt.Sprintf("%s: $ref %q leads nowhere in the document", ptr, ref))
			}
		}
		for _, k := range sortedKeys(x) {
			out = append(out, d.danglingRefs(x[k], ptr+"/"+escape(k))...)
		}
	case []any:
		for i, e := range x {
			out = append(out, d.danglingRefs(e, ptr+"/"+strconv.Itoa(i))...)
		}
	}
	return out
}

// Security returns the security requirements that apply to o: each
// alternative's scheme names, sorted; an empty alternative is no
// authentication.
func (o *Operation) Security() [][]string {
	list, _ := o.security.([]any)
	out := make([][]string, 0, len(list))
	for _, alt := range list {
		m, _ := alt.(map[string]any)
		out = append(out, sortedKeys(m))
	}
	return out
}

// Statuses returns the statuses o lists, sorted.
func (o *Operation) Statuses() []string {
	responses, _ := o.obj["responses"].(map[string]any)
	return sortedKeys(responses)
}

// HeaderParam reports whether o takes the header parameter name.
func (o *Operation) HeaderParam(name string) bool {
	return slices.ContainsFunc(o.params, func(p param) bool { return p.in == "header" && strings.EqualFold(p.name, name) })
}

// QueryParams returns the names of o's query parameters, sorted.
func (o *Operation) QueryParams() []string {
	var out []string
	for _, p := range o.params {
		if p.in == "query" {
			out = append(out, p.name)
		}
	}
	slices.Sort(out)
	return out
}
