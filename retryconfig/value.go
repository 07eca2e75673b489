package retryconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// A document is read in two steps. decode reads it, with encoding/json's
// Decoder.Token, into a tree of values that keeps every member of every
// object in document order, duplicates included (json.Unmarshal would
// keep the last one silently); then Parse walks the tree, so that each
// problem is reported at its path, and a duplicate key as one.

// maxDepth bounds nesting, so that decode, which recurses once per level,
// cannot be made to use much stack by a hostile document; no config nests
// more than a few levels.
const maxDepth = 100

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindObject
	kindArray
)

// value is one JSON value of a document.
type value struct {
	kind    kind
	text    string   // a string's value, a number's text as written, "true" or "false"
	raw     []byte   // the value as written, a slice of the document, for error messages
	members []member // an object's, in document order
	elems   []*value // an array's
}

// member is one key and value of a JSON object.
type member struct {
	key string
	val *value
}

// syntaxError says that a document is not valid JSON, and where.
type syntaxError struct {
	msg    string
	offset int64
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("not valid JSON: %s at byte %d", e.msg, e.offset)
}

// decode reads data, which must be exactly one JSON value, into a tree;
// an error is a *syntaxError.
func decode(data []byte) (*value, error) {
	d := decoder{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	d.dec.UseNumber() // a number's text, not a float64 that a large exponent overflows
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	end := int(d.dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], space); len(rest) > 0 {
		return nil, &syntaxError{"data after the value", int64(len(data) - len(rest))}
	}
	return v, nil
}

// space is JSON's white space.
const space = " \t\r\n"

type decoder struct {
	data []byte
	dec  *json.Decoder
}

// next returns the offset of the byte where the next value or key starts,
// past the space and the separator after the last token: the Decoder
// reads a ',' or a ':' with the token after it.
func (d *decoder) next() int {
	off := int(d.dec.InputOffset())
	rest := bytes.TrimLeft(d.data[off:], space)
	if len(rest) > 0 && (rest[0] == ',' || rest[0] == ':') {
		rest = bytes.TrimLeft(rest[1:], space)
	}
	return len(d.data) - len(rest)
}

// value reads the value whose first token comes next, at nesting depth
// depth.
func (d *decoder) value(depth int) (*value, error) {
	start := d.next()
	tok, err := d.dec.Token()
	if err != nil {
		return nil, d.syntax(err)
	}
	v := &value{}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return nil, &syntaxError{"nested too deep", int64(start)}
		}
		if err := d.composite(v, t, depth); err != nil {
			return nil, err
		}
	case string:
		v.kind, v.text = kindString, t
	case json.Number:
		v.kind, v.text = kindNumber, string(t)
	case bool:
		v.kind, v.text = kindBool, strconv.FormatBool(t)
	case nil:
		v.kind = kindNull
	}
	v.raw = d.data[start:d.dec.InputOffset():d.dec.InputOffset()]
	return v, nil
}

// composite reads the members or elements of the object or array that
// open began, and its closing token.
func (d *decoder) composite(v *value, open json.Delim, depth int) error {
	switch open {
	case '{':
		v.kind = kindObject
	case '[':
		v.kind = kindArray
	default: // Token returns a closing delimiter only where one may be
		return &syntaxError{fmt.Sprintf("unexpected %q", rune(open)), d.dec.InputOffset()}
	}
	for d.dec.More() {
		var key string
		if v.kind == kindObject {
			tok, err := d.dec.Token()
			if err != nil {
				return d.syntax(err)
			}
			key, _ = tok.(string) // Token returns a string where a key must be
		}
		el, err := d.value(depth + 1)
		if err != nil {
			return err
		}
		if v.kind == kindObject {
			v.members = append(v.members, member{key, el})
		} else {
			v.elems = append(v.elems, el)
		}
	}
	if _, err := d.dec.Token(); err != nil { // the closing delimiter
		return d.syntax(err)
	}
	return nil
}

// syntax turns an error of the Decoder into a *syntaxError.
func (d *decoder) syntax(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return &syntaxError{strings.TrimPrefix(se.Error(), "json: "), se.Offset}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &syntaxError{"unexpected end", int64(len(d.data))}
	}
	return &syntaxError{err.Error(), d.dec.InputOffset()}
}

// object returns the members of v, rejecting anything but an object and a
// key that appears twice.
func object(v *value) ([]member, error) {
	if v.kind != kindObject {
		return nil, fmt.Errorf("%s is not an object", describe(v))
	}
	if key, ok := duplicate(v.members); ok {
		return nil, fmt.Errorf("%q appears twice", key)
	}
	return v.members, nil
}

// duplicate returns a key that appears twice in ms, if one does.
func duplicate(ms []member) (string, bool) {
	if len(ms) <= 16 { // most objects: no map
		for i := range ms {
			for _, m := range ms[:i] {
				if m.key == ms[i].key {
					return m.key, true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.key] {
			return m.key, true
		}
		seen[m.key] = true
	}
	return "", false
}

// elements returns the elements of v, rejecting anything but an array.
func elements(v *value) ([]*value, error) {
	if v.kind != kindArray {
		return nil, fmt.Errorf("%s is not an array", describe(v))
	}
	return v.elems, nil
}

// describe quotes a value for an error message, cut short if long: a
// document is configuration, not a secret, but it can be large.
func describe(v *value) string {
	const limit = 40
	s := string(v.raw)
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}

func isNull(v *value) bool { return v.kind == kindNull }

// str returns the value of a JSON string.
func str(v *value) (string, error) {
	if v.kind != kindString {
		return "", fmt.Errorf("%s is not a string", describe(v))
	}
	return v.text, nil
}

// boolean returns the value of true or false.
func boolean(v *value) (bool, error) {
	if v.kind != kindBool {
		return false, fmt.Errorf("%s is not true or false", describe(v))
	}
	return v.text == "true", nil
}

// integer returns a JSON number that is a whole number within int32,
// which is ample for any count here and keeps arithmetic on it safe.
func integer(v *value) (int, error) {
	f, err := number(v)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, fmt.Errorf("%s is not a whole number", describe(v))
	}
	return int(f), nil
}

// number returns a finite JSON number.
func number(v *value) (float64, error) {
	if v.kind != kindNumber {
		return 0, fmt.Errorf("%s is not a number", describe(v))
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s is not a number in range", describe(v))
	}
	return f, nil
}

// isNumber reports whether s is a JSON number, as written.
func isNumber(s string) bool {
	v, err := decode([]byte(s))
	return err == nil && v.kind == kindNumber && len(v.raw) == len(s)
}
