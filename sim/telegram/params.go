package telegram

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
)

// maxBody bounds the request bodies the simulator reads.
const maxBody = 16 << 20

// Encodings of a call's parameters, as Call.Encoding names them.
const (
	EncodingQuery     = "query"     // URL query string only
	EncodingForm      = "form"      // application/x-www-form-urlencoded
	EncodingMultipart = "multipart" // multipart/form-data
	EncodingJSON      = "json"      // application/json
)

// errBadBody is a body the Bot API server cannot parse; it answers such a
// request with a bare status line and no body.
var errBadBody = errors.New("telegram: malformed request body")

// params holds a call's parameters. As in the Bot API server, the URL
// query's parameters come first and the first of two equal names wins.
type params map[string]string

func (p params) add(k, v string) {
	if _, ok := p[k]; !ok {
		p[k] = v
	}
}

// readParams decodes the parameters of r the way the Bot API server does:
// the URL query, then the body by its content type. A JSON body must be an
// object; its string values are decoded and any other value (number, bool,
// object, array, null) is kept as its JSON text, so chat_id -100123 and
// "-100123" are the same parameter. A body of another content type is
// ignored.
func readParams(r *http.Request) (params, string, error) {
	p := params{}
	q, _ := url.ParseQuery(r.URL.RawQuery)
	for k, vs := range q {
		if len(vs) > 0 {
			p.add(k, vs[0])
		}
	}
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	enc := EncodingQuery
	switch {
	case strings.Contains(ct, "multipart/form-data"):
		enc = EncodingMultipart
		_, mp, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mp["boundary"] == "" {
			return p, enc, errBadBody
		}
		mr := multipart.NewReader(io.LimitReader(r.Body, maxBody), mp["boundary"])
		for {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return p, enc, errBadBody
			}
			v, err := io.ReadAll(part)
			if err != nil {
				return p, enc, errBadBody
			}
			if part.FormName() != "" && part.FileName() == "" {
				p.add(part.FormName(), string(v))
			}
		}
	case strings.Contains(ct, "application/x-www-form-urlencoded"):
		enc = EncodingForm
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			return p, enc, errBadBody
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return p, enc, errBadBody
		}
		for k, vs := range form {
			p.add(k, vs[0])
		}
	case strings.Contains(ct, "application/json"):
		enc = EncodingJSON
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			return p, enc, errBadBody
		}
		if len(bytes.TrimSpace(body)) == 0 {
			break
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return p, enc, errBadBody
		}
		for k, raw := range obj {
			raw = bytes.TrimSpace(raw)
			if len(raw) > 0 && raw[0] == '"' {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					return p, enc, errBadBody
				}
				p.add(k, s)
			} else {
				p.add(k, string(raw))
			}
		}
	}
	return p, enc, nil
}
