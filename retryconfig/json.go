package retryconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// member is one key and value of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// members splits a JSON object into its members, rejecting anything else,
// a duplicate key (which encoding/json would silently resolve to the last
// one) and trailing data.
func members(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", syntaxText(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s is not an object", describe(raw))
	}
	var ms []member
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", syntaxText(err))
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", syntaxText(err))
		}
		if seen[key] {
			return nil, fmt.Errorf("%q appears twice", key)
		}
		seen[key] = true
		ms = append(ms, member{key, val})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("not valid JSON: %v", syntaxText(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not valid JSON: data after the object")
	}
	return ms, nil
}

// elements splits a JSON array into its elements.
func elements(raw []byte) ([]json.RawMessage, error) {
	var els []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("%s is not an array", describe(raw))
	}
	if err := json.Unmarshal(raw, &els); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", syntaxText(err))
	}
	return els, nil
}

func syntaxText(err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	return err.Error()
}

// describe quotes a value for an error message, cut short if long: a
// document is configuration, not a secret, but it can be large.
func describe(raw []byte) string {
	const limit = 40
	s := string(bytes.TrimSpace(raw))
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// str decodes a JSON string.
func str(raw []byte) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%s is not a string", describe(raw))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s is not a valid string", describe(raw))
	}
	return s, nil
}

// integer decodes a JSON number that is a whole number within int32, which
// is ample for any count here and keeps arithmetic on it safe.
func integer(raw []byte) (int, error) {
	f, err := number(raw)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, fmt.Errorf("%s is not a whole number", describe(raw))
	}
	return int(f), nil
}

// number decodes a finite JSON number.
func number(raw []byte) (float64, error) {
	if len(raw) == 0 || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return 0, fmt.Errorf("%s is not a number", describe(raw))
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s is not a number in range", describe(raw))
	}
	return f, nil
}
