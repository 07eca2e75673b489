package retryhttp

import (
	"math"
	"net/http"
	"strings"
	"time"
)

// QuotaState is what a response says of its origin's quota, as
// [ParseQuota] reads it.
type QuotaState struct {
	// Remaining is how many requests are left in the current window.
	Remaining int64
	// Reset is how long until the quota is restored, capped at the limit
	// ParseQuota was given; 0 when the response does not say.
	Reset time.Duration
	// Interval is how far apart the requests left must go to fit the
	// rest of the window, the reset over Remaining (the reset before it
	// was capped: a day's quota is not spent in the cap's minute), itself
	// capped at the limit; 0 when either is unknown or 0.
	Interval time.Duration
}

// Exhausted reports whether the quota is used up: no request left, and
// a reset to wait for. A quota that is used up with no reset said holds
// nothing: nothing says how long to wait.
func (q QuotaState) Exhausted() bool { return q.Remaining == 0 && q.Reset > 0 }

// interval returns reset/remaining, capped at limit, computed in floats
// so that no count and no reset overflows: 0 if either is not positive.
func interval(reset float64, remaining int64, limit time.Duration) time.Duration {
	if reset <= 0 || remaining <= 0 {
		return 0
	}
	return time.Duration(min(reset/float64(remaining), float64(limit)))
}

// The canonical keys of the fields read, looked up in the header map as
// they are so that no key is canonicalized per response.
const (
	keyRateLimit       = "Ratelimit"
	keyRateLimitPolicy = "Ratelimit-Policy"
	keyXRemaining      = "X-Ratelimit-Remaining"
	keyXReset          = "X-Ratelimit-Reset"
)

// epochAbove is the X-RateLimit-Reset above which the value is a Unix
// time (GitHub's) rather than a delay (most others'): 10⁹ seconds is 2001
// as a time, and 31 years as a delay.
const epochAbove = 1_000_000_000

// ParseQuota returns what h, a response's header read at now, says of its
// origin's quota, and whether it says anything; limit (which must be
// positive) caps the Reset, as MaxRetryAfter caps a Retry-After.
//
// The RateLimit field goes first: a structured field List (RFC 9651) of
// policies such as `"default";r=0;t=30`, whose r (required) is the
// requests left and t the seconds until more are available. Of several
// policies the one that binds counts: one used up (the latest reset
// among them), else the one whose requests left must go furthest apart
// (the longest Interval). A
// policy without t takes its window, the w of the RateLimit-Policy
// member of the same name, as its reset. A field that does not parse, or
// a member that is not a String or Token with a non-negative Integer r
// and t, is ignored as a whole, as the draft requires.
//
// Without a usable RateLimit, X-RateLimit-Remaining (digits) and
// X-RateLimit-Reset are read: a Reset above 10⁹ is a Unix time in seconds
// (GitHub's), else a delay in seconds; either may have a fraction. A
// reset in the past or now, a sign, an exponent, text, or a header sent
// twice with different values is ignored; so is, in every field, a reset
// more than a month away (a delay of 10⁹, a Unix time a century ahead),
// which no server means; one within a month is capped at limit. A Unix
// time is read against now: a client whose clock is off errs by as much,
// within limit.
//
// A response with a positive Age came from a cache (RFC 9111 §5.1), and
// says nothing of the quota now: the draft says to ignore its fields.
func ParseQuota(h http.Header, now time.Time, limit time.Duration) (QuotaState, bool) {
	if !hasQuota(h) || cached(h) {
		return QuotaState{}, false
	}
	if lines := h[keyRateLimit]; len(lines) > 0 {
		if q, ok := parseRateLimit(lines, h[keyRateLimitPolicy], limit); ok {
			return q, true
		}
	}
	v, ok := oneValue(h[keyXRemaining])
	if !ok || !isDigits(v) {
		return QuotaState{}, false
	}
	whole, _, _ := parseDecimal(v)
	q := QuotaState{Remaining: int64(min(whole, maxCount))}
	if v, ok := oneValue(h[keyXReset]); ok {
		reset := parseReset(v, now)
		q.Reset = min(reset, limit)
		q.Interval = interval(float64(reset), q.Remaining, limit)
	}
	return q, true
}

// maxCount bounds a count of requests read from a header: more than any
// quota means, few enough that arithmetic on it cannot overflow.
const maxCount = 1 << 50

// cached reports whether h is of a response from a cache: a positive Age,
// whose quota is as old as it is. An Age that is not delta-seconds is
// ignored, as RFC 9111 §5.1 says.
func cached(h http.Header) bool {
	age, ok := oneValue(h["Age"])
	return ok && isDigits(age) && strings.TrimLeft(age, "0") != ""
}

// hasQuota reports whether h carries a field that ParseQuota reads: two
// map lookups, for the responses that carry none.
func hasQuota(h http.Header) bool {
	return len(h[keyRateLimit]) > 0 || len(h[keyXRemaining]) > 0
}

// maxQuotaReset is the furthest reset a quota may name: a month, the
// longest window quotas are sold by. One further away (a delay of 10⁹
// seconds, a Unix time a century ahead, a 15-digit t) is not a reset any
// server means, and is ignored rather than waited for up to the cap.
const maxQuotaReset = 31 * 24 * time.Hour

// parseReset reads an X-RateLimit-Reset, as ParseQuota says, uncapped; 0
// for one that is malformed, past, or beyond maxQuotaReset.
func parseReset(v string, now time.Time) time.Duration {
	whole, frac, ok := parseDecimal(v)
	var d time.Duration
	switch {
	case !ok:
		return 0
	case whole > epochAbove || whole == epochAbove && frac > 0:
		// A Unix time: Sub saturates for one beyond any clock's range.
		d = time.Unix(int64(whole), int64(frac)).Sub(now)
	default:
		d = scaled(whole, frac, time.Second, math.MaxInt64)
	}
	if d <= 0 || d > maxQuotaReset {
		return 0
	}
	return d
}

// parseRateLimit reads the RateLimit field, given as its field lines, with
// RateLimit-Policy's lines for the windows, as ParseQuota says.
func parseRateLimit(lines, policies []string, limit time.Duration) (QuotaState, bool) {
	var best QuotaState
	found := false
	for _, line := range lines {
		sc := newSFList(line)
		for sc.next() {
			if sc.inner || sc.item.kind != sfString && sc.item.kind != sfToken {
				return QuotaState{}, false
			}
			r, t := int64(-1), int64(-1)
			for sc.nextParam() {
				switch sc.key {
				case "r", "t":
					if sc.val.kind != sfInteger || sc.val.num < 0 {
						return QuotaState{}, false
					}
					if sc.key == "r" {
						r = sc.val.num
					} else {
						t = sc.val.num
					}
				}
			}
			if sc.bad || r < 0 {
				return QuotaState{}, false
			}
			if t > int64(maxQuotaReset/time.Second) {
				t = -1 // huge: no reset a server means
			}
			if t < 0 {
				t = policyWindow(policies, sc.item.str)
			}
			q := QuotaState{Remaining: r, Reset: scaled(uint64(max(t, 0)), 0, time.Second, limit),
				Interval: interval(float64(t)*float64(time.Second), r, limit)}
			if !found || binds(q, best) {
				best, found = q, true
			}
		}
		if sc.bad {
			return QuotaState{}, false
		}
	}
	return best, found
}

// binds reports whether quota a binds more than b: a used-up one before
// any other (the later reset first), then one with a reset before one
// without, then the longer interval, then the fewer requests left.
func binds(a, b QuotaState) bool {
	switch {
	case a.Exhausted() != b.Exhausted():
		return a.Exhausted()
	case a.Exhausted():
		return a.Reset > b.Reset
	case (a.Reset > 0) != (b.Reset > 0):
		return a.Reset > 0
	case a.Interval != b.Interval:
		return a.Interval > b.Interval
	}
	return a.Remaining < b.Remaining
}

// policyWindow returns the w, in seconds, of the RateLimit-Policy member
// named id, or -1 if there is none: a policy's window bounds when its
// quota comes back.
func policyWindow(lines []string, id string) int64 {
	w := int64(-1)
	for _, line := range lines {
		sc := newSFList(line)
		for sc.next() {
			named := !sc.inner && (sc.item.kind == sfString || sc.item.kind == sfToken) && sc.item.str == id
			for sc.nextParam() {
				if named && sc.key == "w" && sc.val.kind == sfInteger && sc.val.num > 0 && sc.val.num <= int64(maxQuotaReset/time.Second) {
					w = sc.val.num
				}
			}
		}
		if sc.bad {
			return -1 // malformed: ignored, as RateLimit would be
		}
	}
	return w
}
