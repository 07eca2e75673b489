package retryhttp_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
)

// parseNow is the time the parse tests read headers at: 1,780,000,000 in
// Unix seconds, well above the 10⁹ that splits epochs from delays.
var parseNow = time.Unix(1_780_000_000, 0)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestParseQuota(t *testing.T) {
	t.Parallel()
	const limit = time.Minute
	epoch := func(d time.Duration) string { return strconv.FormatInt(parseNow.Add(d).Unix(), 10) }
	type q = retryhttp.QuotaState
	tests := []struct {
		name   string
		h      http.Header
		want   q
		wantOK bool
	}{
		{"none", header(), q{}, false},
		{"policy alone says nothing of now", header("RateLimit-Policy", `"default";q=100;w=60`), q{}, false},

		// RateLimit, the draft's structured field.
		{"string id", header("RateLimit", `"default";r=50;t=30`), q{50, 30 * time.Second, 600 * time.Millisecond}, true},
		{"token id", header("RateLimit", `default;r=0;t=5`), q{0, 5 * time.Second, 0}, true},
		{"no reset", header("RateLimit", `"default";r=999`), q{999, 0, 0}, true},
		{"reset from the policy's window", header("RateLimit", `"day";r=0`, "RateLimit-Policy", `"hour";q=10;w=3600, "day";q=100;w=20`), q{0, 20 * time.Second, 0}, true},
		{"no window for another policy", header("RateLimit", `"day";r=0`, "RateLimit-Policy", `"hour";q=10;w=30`), q{0, 0, 0}, true},
		{"malformed policy ignored", header("RateLimit", `"day";r=0`, "RateLimit-Policy", `"day";q=10;w=30,`), q{0, 0, 0}, true},
		{"unknown parameters are comments", header("RateLimit", `"a";r=3;t=9;pk=:cHsdsRa894==:;acme-x="y";flag`), q{3, 9 * time.Second, 3 * time.Second}, true},
		{"reset capped", header("RateLimit", `"a";r=0;t=86400`), q{0, limit, 0}, true},
		{"15 digits: a reset no server means", header("RateLimit", `"a";r=0;t=999999999999999`), q{0, 0, 0}, true},
		{"a month is the furthest reset", header("RateLimit", `"a";r=0;t=2678400`), q{0, limit, 0}, true},
		{"past a month, ignored", header("RateLimit", `"a";r=0;t=2678401`), q{0, 0, 0}, true},
		{"a huge t gives way to the window", header("RateLimit", `"a";r=0;t=99999999999`, "RateLimit-Policy", `"a";q=5;w=20`), q{0, 20 * time.Second, 0}, true},
		{"a huge window is no window", header("RateLimit", `"a";r=0`, "RateLimit-Policy", `"a";q=5;w=99999999999`), q{0, 0, 0}, true},
		{"15-digit counts", header("RateLimit", `"a";r=999999999999999;t=86400`), q{999999999999999, limit, 0}, true}, // 0.09ns apart: no pace
		{"exhausted binds", header("RateLimit", `"min";r=5;t=10, "hour";r=0;t=40`), q{0, 40 * time.Second, 0}, true},
		{"the later reset of two used up", header("RateLimit", `"a";r=0;t=10, "b";r=0;t=20, "c";r=0;t=5`), q{0, 20 * time.Second, 0}, true},
		{"the slowest pace", header("RateLimit", `"min";r=10;t=10, "hour";r=100;t=3000`), q{100, limit, 30 * time.Second}, true},
		{"a reset beats none", header("RateLimit", `"a";r=1, "b";r=50;t=10`), q{50, 10 * time.Second, 200 * time.Millisecond}, true},
		{"fewest left without resets", header("RateLimit", `"a";r=7, "b";r=3`), q{3, 0, 0}, true},
		{"split over lines", header("RateLimit", `"a";r=5;t=10`, "RateLimit", `"b";r=0;t=3`), q{0, 3 * time.Second, 0}, true},
		{"duplicate parameter: the last", header("RateLimit", `"a";r=0;t=3;r=4`), q{4, 3 * time.Second, 750 * time.Millisecond}, true},
		{"zero reset holds nothing", header("RateLimit", `"a";r=0;t=0`), q{0, 0, 0}, true},

		// Malformed RateLimit: ignored as a whole, as the draft says.
		{"negative r", header("RateLimit", `"a";r=-1;t=5`), q{}, false},
		{"negative t", header("RateLimit", `"a";r=0;t=-5`), q{}, false},
		{"decimal r", header("RateLimit", `"a";r=1.5;t=5`), q{}, false},
		{"string t", header("RateLimit", `"a";r=0;t="5"`), q{}, false},
		{"missing r", header("RateLimit", `"a";t=5`), q{}, false},
		{"16 digits", header("RateLimit", `"a";r=0;t=1000000000000000`), q{}, false},
		{"integer id", header("RateLimit", `5;r=0;t=5`), q{}, false},
		{"inner list", header("RateLimit", `("a" "b");r=0;t=5`), q{}, false},
		{"trailing comma", header("RateLimit", `"a";r=0;t=5,`), q{}, false},
		{"unterminated string", header("RateLimit", `"a;r=0;t=5`), q{}, false},
		{"old dictionary form", header("RateLimit", `limit=100, remaining=0, reset=5`), q{}, false},
		{"one bad line spoils all", header("RateLimit", `"a";r=0;t=5`, "RateLimit", `"b";r=x`), q{}, false},
		{"upper-case key", header("RateLimit", `"a";R=0;t=5`), q{}, false},
		{"NaN", header("RateLimit", `"a";r=NaN;t=5`), q{}, false},

		// A malformed RateLimit gives way to X-RateLimit.
		{"fallback", header("RateLimit", `oops=`, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "7"), q{0, 7 * time.Second, 0}, true},
		{"RateLimit first", header("RateLimit", `"a";r=9;t=9`, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "7"), q{9, 9 * time.Second, time.Second}, true},

		// X-RateLimit-Remaining and -Reset.
		{"delay", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "30"), q{0, 30 * time.Second, 0}, true},
		{"delay with a fraction", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1.25"), q{0, 1250 * time.Millisecond, 0}, true},
		{"epoch", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(30*time.Second)), q{0, 30 * time.Second, 0}, true},
		{"epoch with a fraction", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(2*time.Second)+".5"), q{0, 2500 * time.Millisecond, 0}, true},
		{"epoch in the past", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(-30*time.Second)), q{0, 0, 0}, true},
		{"epoch now", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(0)), q{0, 0, 0}, true},
		{"epoch days ahead, capped", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(240*time.Hour)), q{0, limit, 0}, true},
		{"epoch a century ahead, ignored", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch(100*365*24*time.Hour)), q{0, 0, 0}, true},
		{"10^9 is a delay of 31 years, ignored", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1000000000"), q{0, 0, 0}, true},
		{"just above 10^9 is an epoch, long past", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1000000001"), q{0, 0, 0}, true},
		{"10^9 and a fraction is an epoch", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1000000000.5"), q{0, 0, 0}, true},
		{"just below 10^9 is a delay, ignored", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "999999999"), q{0, 0, 0}, true},
		{"a delay of a day, capped", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "86400"), q{0, limit, 0}, true},
		{"a day's pace, from the uncapped reset", header("X-RateLimit-Remaining", "10", "X-RateLimit-Reset", "86400"), q{10, limit, limit}, true},
		{"huge", header("X-RateLimit-Remaining", "99999999999999999999999", "X-RateLimit-Reset", "99999999999999999999999999"), q{1 << 50, 0, 0}, true},
		{"no reset", header("X-RateLimit-Remaining", "0"), q{0, 0, 0}, true},
		{"reset alone", header("X-RateLimit-Reset", "30"), q{}, false},
		{"negative remaining", header("X-RateLimit-Remaining", "-1", "X-RateLimit-Reset", "30"), q{}, false},
		{"fraction remaining", header("X-RateLimit-Remaining", "0.5", "X-RateLimit-Reset", "30"), q{}, false},
		{"negative reset", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "-30"), q{0, 0, 0}, true},
		{"signed reset", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "+30"), q{0, 0, 0}, true},
		{"NaN reset", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "NaN"), q{0, 0, 0}, true},
		{"exponent reset", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1e3"), q{0, 0, 0}, true},
		{"date reset", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "Sun, 01 Mar 2026 12:00:30 GMT"), q{0, 0, 0}, true},
		{"padding", header("X-RateLimit-Remaining", " 0 ", "X-RateLimit-Reset", " 30 "), q{0, 30 * time.Second, 0}, true},
		{"repeated alike", header("X-RateLimit-Remaining", "0", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "30, 30"), q{0, 30 * time.Second, 0}, true},
		{"repeated unlike remaining", header("X-RateLimit-Remaining", "0", "X-RateLimit-Remaining", "5", "X-RateLimit-Reset", "30"), q{}, false},
		{"repeated unlike reset", header("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "30, 3000"), q{0, 0, 0}, true},
		{"from a cache", header("Age", "12", "RateLimit", `"a";r=0;t=30`), q{}, false},
		{"fresh", header("Age", "00", "RateLimit", `"a";r=0;t=30`), q{0, 30 * time.Second, 0}, true},
		{"a malformed Age is ignored", header("Age", "-3", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "30"), q{0, 30 * time.Second, 0}, true},
		{"X-RateLimit from a cache", header("Age", "3", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "30"), q{}, false},
		{"empty element", header("X-RateLimit-Remaining", "0,", "X-RateLimit-Reset", "30"), q{}, false},
	}
	for _, tt := range tests {
		got, ok := retryhttp.ParseQuota(tt.h, parseNow, limit)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: ParseQuota(%v) = %+v, %v, want %+v, %v", tt.name, tt.h, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestQuotaStateExhausted(t *testing.T) {
	t.Parallel()
	type q = retryhttp.QuotaState
	assert.True(t, q{0, time.Second, 0}.Exhausted())
	assert.False(t, q{0, 0, 0}.Exhausted(), "no reset: nothing to wait for")
	assert.False(t, q{1, time.Second, 0}.Exhausted())
	assert.Equal(t, "hold", retryhttp.QuotaHold.String())
	assert.Equal(t, "spread", retryhttp.QuotaSpread.String())
	assert.Equal(t, "off", retryhttp.QuotaOff.String())
	assert.Equal(t, "QuotaMode(17)", retryhttp.QuotaMode(17).String())
}

func TestParseRetryAfterMillis(t *testing.T) {
	t.Parallel()
	const limit = time.Minute
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"1500", 1500 * time.Millisecond, true},
		{" 250 ", 250 * time.Millisecond, true},
		{"2.5", 2500 * time.Microsecond, true},
		{"0.0001", 100 * time.Nanosecond, true},
		{"59999", 59999 * time.Millisecond, true},
		{"60000", limit, true},
		{"99999999999999999999999999", limit, true},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.", 0, false},
		{".5", 0, false},
		{"1e3", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"1,5", 0, false},
		{"15ms", 0, false},
	}
	for _, tt := range tests {
		got, ok := retryhttp.ParseRetryAfterMillis(tt.in, limit)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseRetryAfterMillis(%q) = %v, %v, want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
	// A limit below a unit still clamps, and 0 is still 0.
	got, ok := retryhttp.ParseRetryAfterMillis("0", time.Microsecond)
	assert.True(t, ok)
	assert.Zero(t, got)
	got, _ = retryhttp.ParseRetryAfterMillis("1", time.Microsecond)
	assert.Equal(t, time.Microsecond, got)
}
