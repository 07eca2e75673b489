package retryconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// member is one key and value of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// members splits a JSON object into its members, rejecting anything else
// and a duplicate key (which encoding/json would silently resolve to the
// last one). raw must be part of a document that validDocument accepted.
// The members are appended to buf, which may be a caller's array on its
// stack.
func members(raw []byte, buf []member) ([]member, error) {
	return split(raw, buf, true)
}

// split is members, checking for duplicate keys only if dups is set: a
// caller that puts the members in a map of its own finds them there, at no
// extra cost, as parseDoc does for a thousand policies.
func split(raw []byte, buf []member, dups bool) ([]member, error) {
	i := skipSpace(raw, 0)
	if raw[i] != '{' {
		return nil, fmt.Errorf("%s is not an object", describe(raw))
	}
	ms := buf[:0]
	if cap(ms) == 0 {
		ms = make([]member, 0, 8)
	}
	var seen map[string]bool
	for i = skipSpace(raw, i+1); raw[i] != '}'; {
		kend := endOfString(raw, i)
		key := unquote(raw[i:kend])
		vstart := skipSpace(raw, skipSpace(raw, kend)+1)
		vend := skipTrusted(raw, vstart)
		if !dups {
			ms = append(ms, member{key, raw[vstart:vend:vend]})
			if i = skipSpace(raw, vend); raw[i] == ',' {
				i = skipSpace(raw, i+1)
			}
			continue
		}
		if len(ms) == 8 && seen == nil {
			seen = make(map[string]bool, 16)
			for _, m := range ms {
				seen[m.key] = true
			}
		}
		dup := seen[key]
		if seen == nil {
			for _, m := range ms {
				dup = dup || m.key == key
			}
		} else {
			seen[key] = true
		}
		if dup {
			return nil, fmt.Errorf("%q appears twice", key)
		}
		ms = append(ms, member{key, raw[vstart:vend:vend]})
		if i = skipSpace(raw, vend); raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return ms, nil
}

// elements splits a JSON array into its elements.
func elements(raw []byte) ([]json.RawMessage, error) {
	return elementsBuf(raw, nil)
}

// elementsBuf is elements, appending to buf, which may be a caller's array
// on its stack.
func elementsBuf(raw []byte, buf []json.RawMessage) ([]json.RawMessage, error) {
	i := skipSpace(raw, 0)
	if raw[i] != '[' {
		return nil, fmt.Errorf("%s is not an array", describe(raw))
	}
	els := buf[:0]
	for i = skipSpace(raw, i+1); raw[i] != ']'; {
		end := skipTrusted(raw, i)
		els = append(els, raw[i:end:end])
		if i = skipSpace(raw, end); raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return els, nil
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
	return unquote(raw), nil
}

func unquoteSlow(raw []byte) string {
	var s string
	_ = json.Unmarshal(raw, &s) // skipString has checked raw
	return s
}

// integer decodes a JSON number that is a whole number within int32, which
// is ample for any count here and keeps arithmetic on it safe.
func integer(raw []byte) (int, error) {
	if len(raw) > 0 && len(raw) < 9 { // a small whole number: no float, no allocation
		n := 0
		for _, c := range raw {
			if c < '0' || c > '9' {
				n = -1
				break
			}
			n = n*10 + int(c-'0')
		}
		if n >= 0 && (raw[0] != '0' || len(raw) == 1) {
			return n, nil
		}
	}
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
