package retryconfig

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// A small JSON scanner, in place of encoding/json's Decoder.Token, which
// allocates for every token: a Live.Update of a thousand policies must stay
// well under a millisecond. It validates as strictly as encoding/json (RFC
// 8259), and values are slices of the document, never copies.

// maxDepth bounds nesting, so that a hostile document cannot exhaust the
// stack; no config nests more than a few levels.
const maxDepth = 100

type syntaxError struct {
	msg    string
	offset int
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("not valid JSON: %s at byte %d", e.msg, e.offset)
}

func isSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && isSpace(b[i]) {
		i++
	}
	return i
}

// plain marks the bytes a string holds as they are: printable ASCII but
// the quote and the backslash. skipString steps over a run of them with one
// table lookup a byte, the bulk of the validating pass.
var plain = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\'
	}
	return t
}()

// validDocument checks that b is exactly one JSON value.
func validDocument(b []byte) error {
	i := skipSpace(b, 0)
	end, err := skipValue(b, i, 0)
	if err != nil {
		return err
	}
	if end = skipSpace(b, end); end != len(b) {
		return &syntaxError{"data after the value", end}
	}
	return nil
}

// walkValid is walk and validDocument in one pass, for Parse, which reads
// the bulk of a large document (the policies) where it lies: it calls f
// with the key of each member of the JSON object at b[i:] and the offset of
// its value, and f validates the value (with skipValue, or another
// walkValid) and returns the offset of its end. depth is the object's, as
// skipValue counts it. A *syntaxError means b is not valid JSON up to
// there; any other error (not an object, a duplicate key if dups is set)
// leaves the object unvalidated, for the caller to finish with skipValue.
func walkValid(b []byte, i, depth int, dups bool, f func(key string, v int) (int, error)) (int, error) {
	if i >= len(b) {
		return i, &syntaxError{"unexpected end", i}
	}
	if b[i] != '{' {
		end, err := skipValue(b, i, depth)
		if err != nil {
			return end, err
		}
		return end, fmt.Errorf("%s is not an object", describe(b[i:end]))
	}
	if depth >= maxDepth {
		return i, &syntaxError{"nested too deep", i}
	}
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	var keys keySet
	for {
		if i >= len(b) || b[i] != '"' {
			return i, &syntaxError{"want a string key", i}
		}
		kend, simple, err := scanString(b, i)
		if err != nil {
			return kend, err
		}
		var key string
		if simple {
			key = simpleString(b[i+1 : kend-1])
		} else {
			key = unquote(b[i:kend])
		}
		if dups && keys.add(key) {
			return i, fmt.Errorf("%q appears twice", key)
		}
		if i = skipSpace(b, kend); i >= len(b) || b[i] != ':' {
			return i, &syntaxError{"want ':'", i}
		}
		if i, err = f(key, skipSpace(b, i+1)); err != nil {
			return i, err
		}
		i = skipSpace(b, i)
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == '}':
			return i + 1, nil
		default:
			return i, &syntaxError{"want ',' or '}'", i}
		}
	}
}

// isSyntax reports whether err says that a document is not valid JSON.
func isSyntax(err error) bool {
	_, ok := err.(*syntaxError)
	return ok
}

// skipValue returns the end of the JSON value that starts at b[i].
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, &syntaxError{"unexpected end", i}
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return i, &syntaxError{"nested too deep", i}
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1, nil
		}
		for {
			var err error
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, &syntaxError{"want a string key", i}
				}
				if i, err = skipString(b, i); err != nil {
					return i, err
				}
				if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
					return i, &syntaxError{"want ':'", i}
				}
				i = skipSpace(b, i+1)
			}
			if i, err = skipValue(b, i, depth+1); err != nil {
				return i, err
			}
			i = skipSpace(b, i)
			switch {
			case i < len(b) && b[i] == ',':
				i = skipSpace(b, i+1)
			case i < len(b) && b[i] == closer:
				return i + 1, nil
			default:
				return i, &syntaxError{fmt.Sprintf("want ',' or '%c'", closer), i}
			}
		}
	case c == '"':
		return skipString(b, i)
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit), nil
		}
	}
	return i, &syntaxError{fmt.Sprintf("unexpected %q", b[i]), i}
}

func skipString(b []byte, i int) (int, error) {
	end, _, err := scanString(b, i)
	return end, err
}

// scanString is skipString, reporting too whether the string is simple:
// ASCII without an escape, its bytes as they are, so that a caller that
// needs its value (a key) need not look at them again.
func scanString(b []byte, i int) (end int, simple bool, err error) {
	start := i
	simple = true
	for i++; i < len(b); i++ {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, simple, nil
		case c < 0x20:
			return i, false, &syntaxError{"control character in string", i}
		case c >= utf8.RuneSelf:
			simple = false
		case c == '\\':
			simple = false
			i++
			if i >= len(b) {
				break
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false, &syntaxError{"bad \\u escape", i}
				}
				i += 4
			default:
				return i, false, &syntaxError{"bad escape", i}
			}
		}
	}
	return start, false, &syntaxError{"unterminated string", start}
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func skipNumber(b []byte, i int) (int, error) {
	start := i
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return start, &syntaxError{"bad number", start}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return start, &syntaxError{"bad number", start}
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return start, &syntaxError{"bad number", start}
		}
	}
	return i, nil
}

// unquote decodes a JSON string that skipString accepted, without
// encoding/json when it holds no escape, the common case.
func unquote(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			// An escape, or UTF-8 that must be checked (encoding/json
			// turns an invalid sequence into U+FFFD): the rare case.
			if bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner) {
				return unquoteSlow(raw)
			}
			break
		}
	}
	return simpleString(inner)
}

// simpleString is the value of a string whose bytes between the quotes
// are inner, as they are.
func simpleString(inner []byte) string {
	switch string(inner) { // the names of fields, without an allocation each
	case "maxAttempts":
		return "maxAttempts"
	case "baseBackoff":
		return "baseBackoff"
	case "factor":
		return "factor"
	case "maxBackoff":
		return "maxBackoff"
	case "maxElapsed":
		return "maxElapsed"
	case "attemptTimeout":
		return "attemptTimeout"
	case "jitter":
		return "jitter"
	case "retryableStatusCodes":
		return "retryableStatusCodes"
	case "budget":
		return "budget"
	}
	return string(inner)
}

// skipTrusted returns the end of the JSON value that starts at b[i], in a
// document that validDocument has accepted: it only follows strings and
// brackets, which makes splitting each level of a large document cheap
// after the one validating pass.
func skipTrusted(b []byte, i int) int {
	switch b[i] {
	case '"':
		return endOfString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = endOfString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	return i
}

// endOfString returns the end of the valid JSON string that starts at b[i].
func endOfString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++ // the escaped byte; a \u's hex digits hold no quote
		}
	}
	return len(b)
}
