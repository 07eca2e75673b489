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
	ms := buf[:0]
	if cap(ms) == 0 {
		ms = make([]member, 0, 8)
	}
	_, err := walk(raw, 0, dups, func(key string, v int) int {
		end := skipTrusted(raw, v)
		ms = append(ms, member{key, raw[v:end:end]})
		return end
	})
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// walk calls f with the key of each member of the JSON object at raw[i:],
// in document order, and the offset of its value; f reads the value and
// returns the offset of its end. walk returns the offset of the object's
// end. A caller that reads a large value in place saves the scan that
// would find its end first (walkValid does the same while validating, for
// Parse's policies). walk rejects anything but an object, and a duplicate
// key (which encoding/json would silently resolve to the last one) if dups
// is set. raw must be part of a document that validDocument accepted.
func walk(raw []byte, i int, dups bool, f func(key string, v int) int) (int, error) {
	i = skipSpace(raw, i)
	if raw[i] != '{' {
		return i, fmt.Errorf("%s is not an object", describe(raw[i:skipTrusted(raw, i)]))
	}
	var keys keySet
	for i = skipSpace(raw, i+1); raw[i] != '}'; {
		kend := endOfString(raw, i)
		key := unquote(raw[i:kend])
		if dups && keys.add(key) {
			return i, fmt.Errorf("%q appears twice", key)
		}
		vend := f(key, skipSpace(raw, skipSpace(raw, kend)+1))
		if i = skipSpace(raw, vend); raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return i + 1, nil
}

// keySet holds the keys of one object, to find a duplicate: in an array
// while there are few, as in most objects, in a map beyond.
type keySet struct {
	few  [8]string
	n    int
	seen map[string]bool
}

// add adds key and reports whether it was there already.
func (s *keySet) add(key string) bool {
	switch {
	case s.n < len(s.few):
		for _, k := range s.few[:s.n] {
			if k == key {
				return true
			}
		}
		s.few[s.n] = key
		s.n++
		return false
	case s.seen == nil:
		s.seen = make(map[string]bool, 2*len(s.few))
		for _, k := range s.few {
			s.seen[k] = true
		}
	}
	dup := s.seen[key]
	s.seen[key] = true
	return dup
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
