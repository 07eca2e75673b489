package retryhttp

import "unicode/utf8"

// sfKind is the type of a structured field's bare item (RFC 9651 §3.3).
type sfKind uint8

const (
	sfInteger sfKind = iota + 1
	sfDecimal
	sfString
	sfToken
	sfBinary
	sfBoolean
	sfDate
	sfDisplay
)

// sfItem is a bare item. num holds an Integer, a Date or a Boolean (0 or
// 1); str a Token, or a String as written between its quotes: escapes are
// kept, which is still canonical, since a String may escape only `"` and
// `\` and must escape both.
type sfItem struct {
	kind sfKind
	num  int64
	str  string
}

// sfList scans a structured field List (RFC 9651 §4.2.1) one member at a
// time, and each member's parameters, without allocating:
//
//	sc := newSFList(v)
//	for sc.next() {
//		for sc.nextParam() { … sc.key, sc.val … }
//	}
//	if sc.bad { the field is malformed: ignore all that was read }
//
// Only what the quota fields need is kept (the member's item, its
// parameters as they are read); an Inner List is checked and skipped, with
// inner set. Any syntax error sets bad, and next then reports false: a
// field that fails to parse is ignored as a whole, as §4.2 requires.
type sfList struct {
	s        string
	i        int
	members  int
	inParams bool // the parameters of the latest member are not all read

	bad   bool
	item  sfItem // the latest member's item
	inner bool   // the latest member is an Inner List
	key   string // the latest parameter's key
	val   sfItem // and its value
}

func newSFList(v string) sfList {
	i, j := 0, len(v)
	for i < j && v[i] == ' ' {
		i++
	}
	for j > i && v[j-1] == ' ' {
		j--
	}
	return sfList{s: v[:j], i: i}
}

// next moves to the next member, after skipping what is left of the
// parameters of the latest one. It reports false at the end of the List,
// or on a syntax error (then bad is set).
func (sc *sfList) next() bool {
	for sc.nextParam() {
	}
	if sc.bad {
		return false
	}
	if sc.members > 0 {
		sc.ows()
		if sc.i == len(sc.s) {
			return false
		}
		if sc.s[sc.i] != ',' {
			return sc.fail()
		}
		sc.i++
		sc.ows()
		if sc.i == len(sc.s) { // a trailing comma
			return sc.fail()
		}
	} else if sc.i == len(sc.s) {
		return false // an empty List: as if the field were absent
	}
	sc.members++
	sc.inner = sc.peek() == '('
	if sc.inner {
		if !sc.innerList() {
			return sc.fail()
		}
	} else if sc.item, sc.bad = sc.bareItem(); sc.bad {
		return false
	}
	sc.inParams = true
	return true
}

// nextParam reads the next parameter of the latest member into key and
// val (a parameter without a value is the Boolean true), or reports false
// when it has no more.
func (sc *sfList) nextParam() bool {
	if !sc.inParams || sc.bad {
		return false
	}
	if sc.peek() != ';' {
		sc.inParams = false
		return false
	}
	sc.i++
	for sc.peek() == ' ' {
		sc.i++
	}
	var ok bool
	if sc.key, ok = sc.readKey(); !ok {
		return sc.fail()
	}
	if sc.peek() != '=' {
		sc.val = sfItem{kind: sfBoolean, num: 1}
		return true
	}
	sc.i++
	if sc.val, sc.bad = sc.bareItem(); sc.bad {
		return false
	}
	return true
}

func (sc *sfList) fail() bool {
	sc.bad, sc.inParams = true, false
	return false
}

func (sc *sfList) peek() byte {
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

func (sc *sfList) ows() {
	for sc.i < len(sc.s) && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t') {
		sc.i++
	}
}

// innerList checks an Inner List and its items' parameters (§4.2.1.2).
func (sc *sfList) innerList() bool {
	sc.i++ // (
	for {
		for sc.peek() == ' ' {
			sc.i++
		}
		if sc.peek() == ')' {
			sc.i++
			return true
		}
		if _, bad := sc.bareItem(); bad {
			return false
		}
		sc.inParams = true
		for sc.nextParam() {
		}
		if sc.bad {
			return false
		}
		if c := sc.peek(); c != ' ' && c != ')' {
			return false
		}
	}
}

// readKey reads a key (§4.2.3.3): lcalpha or "*", then lcalpha, DIGIT,
// "_", "-", "." or "*".
func (sc *sfList) readKey() (string, bool) {
	start := sc.i
	if c := sc.peek(); !(c >= 'a' && c <= 'z' || c == '*') {
		return "", false
	}
	for sc.i++; sc.i < len(sc.s); sc.i++ {
		c := sc.s[sc.i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
	}
	return sc.s[start:sc.i], true
}

// bareItem reads a bare item (§4.2.3.1); bad reports a syntax error.
func (sc *sfList) bareItem() (it sfItem, bad bool) {
	c := sc.peek()
	switch {
	case c == '-' || c >= '0' && c <= '9':
		return sc.number()
	case c == '"':
		sc.i++
		s, ok := sc.quoted()
		return sfItem{kind: sfString, str: s}, !ok
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '*':
		start := sc.i
		for sc.i++; sc.i < len(sc.s) && (tchar(sc.s[sc.i]) || sc.s[sc.i] == ':' || sc.s[sc.i] == '/'); sc.i++ {
		}
		return sfItem{kind: sfToken, str: sc.s[start:sc.i]}, false
	case c == ':':
		sc.i++
		start := sc.i
		for sc.i < len(sc.s) && base64Char(sc.s[sc.i]) {
			sc.i++
		}
		if sc.peek() != ':' {
			return it, true
		}
		sc.i++
		return sfItem{kind: sfBinary, str: sc.s[start : sc.i-1]}, false
	case c == '?':
		if sc.i+1 < len(sc.s) && (sc.s[sc.i+1] == '0' || sc.s[sc.i+1] == '1') {
			sc.i += 2
			return sfItem{kind: sfBoolean, num: int64(sc.s[sc.i-1] - '0')}, false
		}
		return it, true
	case c == '@':
		sc.i++
		it, bad = sc.number()
		if bad || it.kind != sfInteger {
			return it, true
		}
		return sfItem{kind: sfDate, num: it.num}, false
	case c == '%':
		return sc.display()
	}
	return it, true
}

// number reads an Integer (at most 15 digits) or a Decimal (at most 12
// digits, a dot, 1 to 3 digits), §4.2.4. A Decimal's value is not kept:
// no quota parameter is one.
func (sc *sfList) number() (sfItem, bool) {
	neg := sc.peek() == '-'
	if neg {
		sc.i++
	}
	var n int64
	digits, dot, frac := 0, false, 0
	for ; sc.i < len(sc.s); sc.i++ {
		c := sc.s[sc.i]
		switch {
		case c >= '0' && c <= '9':
			if dot {
				frac++
			} else {
				digits++
				n = n*10 + int64(c-'0') // 15 digits fit an int64
			}
			if digits > 15 || dot && (digits > 12 || frac > 3) {
				return sfItem{}, true
			}
			continue
		case c == '.' && !dot && digits > 0:
			dot = true
			continue
		}
		break
	}
	switch {
	case digits == 0 || dot && frac == 0:
		return sfItem{}, true
	case dot:
		return sfItem{kind: sfDecimal}, false
	case neg:
		n = -n
	}
	return sfItem{kind: sfInteger, num: n}, false
}

// quoted reads the rest of a String, after its opening quote (§4.2.5).
func (sc *sfList) quoted() (string, bool) {
	start := sc.i
	for ; sc.i < len(sc.s); sc.i++ {
		switch c := sc.s[sc.i]; {
		case c == '\\':
			sc.i++
			if sc.i == len(sc.s) || sc.s[sc.i] != '"' && sc.s[sc.i] != '\\' {
				return "", false
			}
		case c == '"':
			sc.i++
			return sc.s[start : sc.i-1], true
		case c < 0x20 || c > 0x7e:
			return "", false
		}
	}
	return "", false
}

// display checks a Display String (RFC 9651 §4.2.10): %"…" with
// lower-case percent-encoded bytes that make valid UTF-8.
func (sc *sfList) display() (sfItem, bool) {
	sc.i++ // %
	if sc.peek() != '"' {
		return sfItem{}, true
	}
	sc.i++
	var buf []byte // only a Display String allocates: none is expected here
	for ; sc.i < len(sc.s); sc.i++ {
		switch c := sc.s[sc.i]; {
		case c == '%':
			if sc.i+2 >= len(sc.s) || !lowerHex(sc.s[sc.i+1]) || !lowerHex(sc.s[sc.i+2]) {
				return sfItem{}, true
			}
			buf = append(buf, unhex(sc.s[sc.i+1])<<4|unhex(sc.s[sc.i+2]))
			sc.i += 2
		case c == '"':
			sc.i++
			return sfItem{kind: sfDisplay}, !utf8.Valid(buf)
		case c < 0x20 || c > 0x7e || c == '\\':
			return sfItem{}, true
		default:
			buf = append(buf, c)
		}
	}
	return sfItem{}, true
}

// tchar reports whether c is a token character (RFC 9110 §5.6.2).
func tchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func base64Char(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

func lowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}
