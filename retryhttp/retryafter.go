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

// retryAfter applies the response's Retry-After header to d, a decision to
// retry: the wait becomes at least what the server asked for (Do then adds
// the jittered backoff on top). A wait of MaxRetryAfter or more is not
// waited for: the response is returned at once, since retrying sooner than
// asked is useless and waiting that long was not allowed. A Retry-After that
// would pass MaxElapsed or the ctx deadline is left to Do, which gives up at
// once with retry.ErrDeadline.
func (c *call) retryAfter(h http.Header, d retry.Decision) retry.Decision {
	limit := c.t.maxRetryAfter()
	if v := h.Get("Retry-After"); v != "" {
		if after, ok := ParseRetryAfter(v, clocks.Now(c.clk), limit); ok {
			d.RetryAfter = max(d.RetryAfter, after)
		}
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
