package retryhttp

import (
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
		got, ok := parseRetryAfter(tt.in, now, limit)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseRetryAfter(%q) = %v, %v, want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// FuzzParseRetryAfter checks that no header value panics or escapes [0, limit].
func FuzzParseRetryAfter(f *testing.F) {
	for _, seed := range []string{"", "0", "7", "-1", "1.5", "99999999999999999999", "Sun, 01 Mar 2026 12:00:30 GMT", "Sun Mar  1 12:00:30 2026"} {
		f.Add(seed, int64(time.Minute))
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string, limit int64) {
		if limit <= 0 {
			return
		}
		got, ok := parseRetryAfter(v, now, time.Duration(limit))
		if got < 0 || got > time.Duration(limit) || (!ok && got != 0) {
			t.Fatalf("parseRetryAfter(%q, limit %v) = %v, %v", v, time.Duration(limit), got, ok)
		}
	})
}
