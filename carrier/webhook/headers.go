package webhook

// validHeaderName reports whether s is an HTTP token (RFC 9110 field-name).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c < 0x80 && c > 0x20 && c != 0x7f && !isSeparator(c):
		default:
			return false
		}
	}
	return true
}

// isSeparator reports whether c is a delimiter that cannot appear in a token.
func isSeparator(c byte) bool {
	switch c {
	case '(', ')', ',', '/', ':', ';', '<', '=', '>', '?', '@', '[', '\\', ']', '{', '}', '"':
		return true
	}
	return false
}

// validHeaderValue reports whether s may be sent as a header value: no
// control characters other than horizontal tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
