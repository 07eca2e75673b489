package retryhttp

import (
	"net/http"
	"strconv"
	"time"

	"github.com/stormguard/retry/internal/clocks"
	"github.com/stormguard/retry/retryconfig"
)

// QuotaMode says what a [Transport] does with the quota that responses
// announce: the RateLimit field of draft-ietf-httpapi-ratelimit-headers
// (with RateLimit-Policy), or else the common X-RateLimit-Remaining and
// X-RateLimit-Reset (see [ParseQuota] for how each is read).
//
// A server that says how many requests are left spares its clients the
// requests that the last response already said were doomed. When a
// response says its origin's quota is used up (no request left, and a
// reset), the origin is held until the reset as a Retry-After holds it
// (see [HoldMode]: client-wide, capped at MaxRetryAfter, weighed against
// each request's deadline, released by probes and then spread by jitter),
// instead of being sent requests it will refuse with a 429.
//
// The zero QuotaMode is QuotaHold. The Transport's Hold still says what
// a held request does (waits, or fails at once with ErrHostHeld), and
// HoldOff keeps no holds, so quotas are not heeded either. A request's
// mode, the Transport's or its named policy's (the "quota" of a
// retryconfig policy), says what its own responses teach and whether it
// is paced; every request waits for a hold, whoever set it.
//
// Quotas are kept per origin, as holds are. A server that splits its
// quota by partition key (a user, a token) and a Transport that serves
// many of them do not fit: one user's quota would hold all the others.
// Give such a Transport QuotaOff, or each partition a Transport.
type QuotaMode uint8

const (
	// QuotaHold holds an origin whose quota is used up until its reset,
	// and otherwise lets requests go as they come. It is the default.
	QuotaHold QuotaMode = iota
	// QuotaSpread holds as QuotaHold does, and also paces the requests
	// left evenly over the rest of the window: with R requests left and
	// a reset in T, at most one request every T/R goes to the origin. A
	// request whose turn is more than MaxRetryAfter away, or after its
	// deadline, or under HoldFailFast any request that would wait, fails
	// at once with ErrHostHeld, and takes no turn.
	QuotaSpread
	// QuotaOff ignores quotas. retry-after-ms and x-ms-retry-after-ms are
	// still read: they are Retry-After in milliseconds.
	QuotaOff
)

// quotaModes are the modes' names, in the order of their values: the
// names of a retryconfig policy's "quota", which owns them.
var quotaModes = retryconfig.QuotaModes()

// String returns the mode's name: "hold", "spread" or "off".
func (m QuotaMode) String() string {
	if int(m) < len(quotaModes) {
		return quotaModes[m]
	}
	return "QuotaMode(" + strconv.Itoa(int(m)) + ")"
}

// configuredQuota returns the quota mode of cfg's policy name ("" for
// "default"), or def when the policy does not set one.
func configuredQuota(cfg *retryconfig.Config, name string, def QuotaMode) QuotaMode {
	if name == "" {
		name = retryconfig.DefaultName
	}
	if s := cfg.HTTPQuota(name); s != "" {
		for m, n := range quotaModes {
			if n == s {
				return QuotaMode(m)
			}
		}
	}
	return def
}

// refusal reports whether status refuses a request for now: the statuses
// whose Retry-After holds an origin.
func refusal(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// waitAsked returns how long a response of status with header h asks the
// next attempt to wait, capped at limit: its Retry-After (see
// retryAfterOf) or, on a refusal without one, its quota's reset when the
// quota is used up and the request heeds quotas.
func (c *call) waitAsked(status int, h http.Header, now time.Time, limit time.Duration) (time.Duration, bool) {
	if d, ok := retryAfterOf(status, h, now, limit); ok {
		return d, true
	}
	if refusal(status) && c.quota != QuotaOff {
		if q, ok := ParseQuota(h, now, limit); ok && q.Exhausted() {
			return q.Reset, true
		}
	}
	return 0, false
}

// holdAsked returns how long resp asks its origin to be held back, read at
// now: a refusal for its Retry-After or used-up quota (waitAsked), any
// other response for a used-up quota. Under QuotaSpread a quota not used
// up paces the origin instead. ok is false when resp asks for no hold.
func (c *call) holdAsked(resp *http.Response) (d time.Duration, now time.Time, ok bool) {
	refused := refusal(resp.StatusCode)
	quota := c.quota != QuotaOff && hasQuota(resp.Header)
	if !refused && !quota {
		return 0, now, false // most responses: no clock read, no parse
	}
	now = clocks.Now(c.clk)
	limit := c.t.maxRetryAfter()
	if refused {
		if d, ok := retryAfterOf(resp.StatusCode, resp.Header, now, limit); ok {
			return d, now, true
		}
	}
	if !quota {
		return 0, now, false
	}
	q, ok := ParseQuota(resp.Header, now, limit)
	switch {
	case !ok:
	case q.Exhausted():
		return q.Reset, now, true
	case c.quota == QuotaSpread:
		c.t.paced.set(c.origin(), now, q)
	}
	return 0, now, false
}
