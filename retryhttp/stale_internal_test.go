package retryhttp

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A delta-seconds from a server is digits or nothing, and never more than
// RFC 9111's 2147483648 seconds, however many digits it has.
func TestDeltaSeconds(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"60":                         60 * time.Second,
		` "60" `:                     60 * time.Second,
		"0":                          0,
		"":                           -1,
		"-5":                         -1,
		"1.5":                        -1,
		"1e9":                        -1,
		"2147483649":                 maxDeltaSeconds * time.Second,
		"99999999999999999999999999": maxDeltaSeconds * time.Second,
	} {
		assert.Equal(t, want, deltaSeconds(in), "deltaSeconds(%q)", in)
	}
}

func TestParseCacheControl(t *testing.T) {
	t.Parallel()
	h := http.Header{"Cache-Control": {`Max-Age=10, stale-if-error="30"`, `no-cache="Set-Cookie", private, x-unknown=1,,`}}
	cc := parseCacheControl(h)
	assert.Equal(t, cacheControl{noCache: true, private: true, maxAge: 10 * time.Second, sMaxAge: -1, staleIfError: 30 * time.Second}, cc)
	assert.Equal(t, 10*time.Second, cc.freshness(h, time.Time{}))
}

// Whatever a server sends in Cache-Control, the parse ends, and every
// delta it keeps is -1 or within bounds, so that no age sum overflows.
func FuzzParseCacheControl(f *testing.F) {
	for _, s := range []string{"max-age=60, stale-if-error=300", "no-store", `s-maxage="9", private`, "stale-if-error=99999999999999999999", ",,=,=="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cc := parseCacheControl(http.Header{"Cache-Control": {s}})
		for _, d := range []time.Duration{cc.maxAge, cc.sMaxAge, cc.staleIfError} {
			if d != -1 && (d < 0 || d > maxDeltaSeconds*time.Second) {
				t.Fatalf("parseCacheControl(%q): delta %v out of bounds", s, d)
			}
		}
	})
}

// An entry's age adds bounded parts only: a hostile Age and a far-future
// Date cannot overflow it or make it negative.
func TestStaleAgeIsBounded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := staleEntry{requestTime: now, responseTime: now, date: now.Add(100 * 365 * 24 * time.Hour),
		ageValue: max(deltaSeconds("99999999999999999999"), 0)}
	assert.Equal(t, maxDeltaSeconds*time.Second, e.age(now))
	e.date = now.Add(-time.Hour)
	e.ageValue = 0
	assert.Equal(t, time.Hour+time.Minute, e.age(now.Add(time.Minute)), "apparent age from Date, plus resident time")
	assert.Equal(t, time.Hour, e.age(now.Add(-time.Minute)), "a clock that went back adds nothing")
}
