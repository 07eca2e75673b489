package retryhttp

import (
	"net/http"
	"strings"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/clocks"
)

// defaultMaxRetryAfter is the longest Retry-After the zero Transport waits
// for: long enough for a rate limit's window, short enough that a
// misconfigured or hostile server cannot park a caller without a deadline.
const defaultMaxRetryAfter = time.Minute

// retryAfter applies the wait that a response of status with header h asks
// for (its Retry-After, see waitAsked) to d, a decision to retry: the wait
// becomes at least what the server asked for (Do then adds
// the jittered backoff on top). A wait of MaxRetryAfter or more is not
// waited for: the response is returned at once, since retrying sooner than
// asked is useless and waiting that long was not allowed. A Retry-After that
// would pass MaxElapsed or the ctx deadline is left to Do, which gives up at
// once with retry.ErrDeadline.
func (c *call) retryAfter(status int, h http.Header, d retry.Decision) retry.Decision {
	limit := c.t.maxRetryAfter()
	if after, ok := c.waitAsked(status, h, clocks.Now(c.clk), limit); ok {
		d.RetryAfter = max(d.RetryAfter, after)
	}
	if d.RetryAfter >= limit {
		return retry.Decision{Reason: d.Reason + "; Retry-After reaches MaxRetryAfter " + limit.String()}
	}
	return d
}

// ParseRetryAfter returns the wait that a Retry-After value v asks for at
// time now, clamped to [0, limit], and whether v is well-formed: either
// delta-seconds (1*DIGIT) or an HTTP-date in any of the three formats of
// RFC 9110 §5.6.7. A date in the past asks for no wait; a number too large
// for any clock asks for limit. Anything else ("+5", "-1", "1.5", text) is
// malformed, to be ignored. limit must be positive. It is the one parser
// of the header in this module: the Transport's holds and waits and the
// outbox's use it.
func ParseRetryAfter(v string, now time.Time, limit time.Duration) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		// Accumulate with a bound rather than strconv.ParseInt, so that a
		// value of any length saturates at limit instead of failing.
		maxSecs := int64(limit / time.Second)
		var secs int64
		for i := 0; i < len(v); i++ {
			secs = secs*10 + int64(v[i]-'0')
			if secs > maxSecs {
				return limit, true
			}
		}
		return min(time.Duration(secs)*time.Second, limit), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), limit), true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// retryAfterOf returns the wait that a response of status with header h
// asks for at now, clamped to [0, limit]: on a 429 or 503,
// retry-after-ms, then x-ms-retry-after-ms (Azure's), which say it to the
// millisecond; else, on any status, Retry-After. A header that is
// malformed, or sent twice with different values, gives way to the next.
func retryAfterOf(status int, h http.Header, now time.Time, limit time.Duration) (time.Duration, bool) {
	if refusal(status) {
		for _, key := range [...]string{"Retry-After-Ms", "X-Ms-Retry-After-Ms"} {
			if v, ok := oneValue(h[key]); ok {
				if d, ok := ParseRetryAfterMillis(v, limit); ok {
					return d, true
				}
			}
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		return ParseRetryAfter(v, now, limit)
	}
	return 0, false
}

// ParseRetryAfterMillis returns the wait that a retry-after-ms or
// x-ms-retry-after-ms value v asks for, clamped to [0, limit], and whether
// v is well-formed: milliseconds, as digits with an optional fraction
// ("1500", "2.5"). A number too large for any clock asks for limit.
// Anything else (a sign, an exponent, "NaN", "1.", text) is malformed, to
// be ignored. limit must be positive. It is [ParseRetryAfter] to the
// millisecond.
func ParseRetryAfterMillis(v string, limit time.Duration) (time.Duration, bool) {
	whole, frac, ok := parseDecimal(strings.TrimSpace(v))
	if !ok {
		return 0, false
	}
	return scaled(whole, frac, time.Millisecond, limit), true
}

// maxWhole is where parseDecimal saturates: beyond any clock's range in
// seconds, and far from overflowing a uint64.
const maxWhole = 1 << 53

// parseDecimal reads v, digits with an optional fraction: whole, saturated
// at maxWhole, and the fraction in billionths (digits past the ninth are
// dropped). Nothing else is accepted: no sign, no exponent, no space.
func parseDecimal(v string) (whole, frac uint64, ok bool) {
	i := 0
	for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		whole = min(whole*10+uint64(v[i]-'0'), maxWhole)
	}
	if i == 0 {
		return 0, 0, false
	}
	if i == len(v) {
		return whole, 0, true
	}
	if v[i] != '.' || i+1 == len(v) {
		return 0, 0, false
	}
	scale := uint64(100_000_000)
	for i++; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, 0, false
		}
		frac += uint64(v[i]-'0') * scale
		scale /= 10
	}
	return whole, frac, true
}

// scaled returns whole and frac billionths of unit, clamped to limit.
func scaled(whole, frac uint64, unit, limit time.Duration) time.Duration {
	if whole > uint64(limit/unit) {
		return limit
	}
	d, part := time.Duration(whole)*unit, time.Duration(frac)*unit/1e9
	if part > limit-d { // d+part, were it not to overflow, is past limit
		return limit
	}
	return d + part
}

// oneValue returns the one value of a header's field lines: each line may
// be a comma-separated list, and every element must be the same, else the
// header is ambiguous and ignored (a proxy that repeats a header repeats
// its value; two servers' values are not to be guessed between).
func oneValue(lines []string) (string, bool) {
	var v string
	for _, line := range lines {
		for more := true; more; {
			var el string
			el, line, more = strings.Cut(line, ",")
			el = strings.TrimSpace(el)
			switch {
			case el == "":
				return "", false
			case v == "":
				v = el
			case el != v:
				return "", false
			}
		}
	}
	return v, v != ""
}
