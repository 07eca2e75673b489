package retryhttp

import (
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const limit = time.Minute
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"   ", 0, false},
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"007", 7 * time.Second, true},
		{"59", 59 * time.Second, true},
		{"60", limit, true},
		{"61", limit, true},
		{"9223372036854775807", limit, true},
		{"99999999999999999999999999999999", limit, true},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"5s", 0, false},
		{"soon", 0, false},
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},  // IMF-fixdate
		{"Sunday, 01-Mar-26 12:00:30 GMT", 30 * time.Second, true}, // RFC 850
		{"Sun Mar  1 12:00:30 2026", 30 * time.Second, true},       // asctime
		{"Sun, 01 Mar 2026 11:00:00 GMT", 0, true},                 // past
		{"Fri, 31 Dec 9999 23:59:59 GMT", limit, true},             // absurd
		{"Mon, 01 Jan 0001 00:00:00 GMT", 0, true},                 // absurd, past
		{"Sun, 01 Mar 2026 12:00:30 PST", 0, false},                // not GMT
		{"2026-03-01T12:00:30Z", 0, false},                         // not an HTTP-date
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now, limit)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseRetryAfter(%q) = %v, %v, want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// FuzzParseRetryAfter checks parseRetryAfter against its doc for any
// header value v and any positive limit: it never panics, the wait is in
// [0, limit], a value that is not well-formed asks for nothing, padding
// changes nothing, delta-seconds of any length are exact up to limit, and an
// HTTP-date is the wait until it, 0 if past. It also writes the date at
// seconds from now in each of the three forms of RFC 9110 §5.6.7 and checks
// that each one asks for exactly the wait until that date. Its seed corpus
// is in testdata/fuzz/FuzzParseRetryAfter.
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string, limit, at int64) {
		lim := time.Duration(limit)
		if lim <= 0 { // the doc requires a positive limit; MaxRetryAfter makes one
			lim = defaultMaxRetryAfter
		}
		got, ok := ParseRetryAfter(v, now, lim)
		if got < 0 || got > lim || (!ok && got != 0) {
			t.Fatalf("ParseRetryAfter(%q, limit %v) = %v, %v: out of range", v, lim, got, ok)
		}
		want, wantOK := retryAfterOracle(v, now, lim)
		if got != want || ok != wantOK {
			t.Fatalf("ParseRetryAfter(%q, limit %v) = %v, %v, want %v, %v", v, lim, got, ok, want, wantOK)
		}
		padded := " \t" + v + "\t "
		if g, o := ParseRetryAfter(padded, now, lim); g != got || o != ok {
			t.Fatalf("ParseRetryAfter(%q, limit %v) = %v, %v, want %v, %v as unpadded", padded, lim, g, o, got, ok)
		}

		// A date within 40 years of now, which RFC 850's two-digit year
		// (1969 to 2068 in Go) can write too.
		ahead := time.Duration(at%(40*365*24*60*60)) * time.Second
		wantDate := min(max(ahead, 0), lim)
		date := now.Add(ahead)
		for _, layout := range []string{http.TimeFormat, rfc850GMT, time.ANSIC} {
			s := date.Format(layout)
			if g, o := ParseRetryAfter(s, now, lim); g != wantDate || !o {
				t.Fatalf("ParseRetryAfter(%q, limit %v) = %v, %v, want %v, true", s, lim, g, o, wantDate)
			}
		}
	})
}

// rfc850GMT is the obsolete RFC 850 form of an HTTP-date, in GMT.
const rfc850GMT = "Monday, 02-Jan-06 15:04:05 GMT"

// retryAfterOracle is what parseRetryAfter's doc says, computed another way:
// delta-seconds in arbitrary precision, so that no length overflows.
func retryAfterOracle(v string, now time.Time, limit time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v != "" && strings.Trim(v, "0123456789") == "" {
		secs, _ := new(big.Int).SetString(v, 10)
		ns := secs.Mul(secs, big.NewInt(int64(time.Second)))
		if ns.Cmp(big.NewInt(int64(limit))) >= 0 {
			return limit, true
		}
		return time.Duration(ns.Int64()), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), limit), true
	}
	return 0, false
}
