package retryhttp

import (
	"hash/maphash"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/loopvals"
)

// A request that an open breaker refuses is the one that must cost least:
// while a service is down, every request to it is one. So RoundTrip first
// asks whether the request's Breaker refuses it outright, and if so fails
// it before it builds the call, its hooks and its closures, with the error
// retry.Do would have returned through the usual path. It does so only
// when that path would do nothing else for a refusal: no hook to call, no
// line to log, no stale answer to look up, no Trace to fill in, and no
// outer loop whose guards the request shares.

// refusedErrors are the errors of a request refused before its first
// attempt, one per refusal, as timeoutAware wraps them: made once.
var refusedErrors = [...]*roundTripError{
	retry.StopThrottled:   {&retry.StopError{Stop: retry.StopThrottled}},
	retry.StopBreakerOpen: {&retry.StopError{Stop: retry.StopBreakerOpen}},
	retry.StopLimited:     {&retry.StopError{Stop: retry.StopLimited}},
}

// refusedError returns the error made once for se, if se is a refusal
// before the first attempt, or nil.
func refusedError(se *retry.StopError) error {
	if se.Attempts != 0 || se.Err != nil || int(se.Stop) >= len(refusedErrors) || refusedErrors[se.Stop] == nil {
		return nil
	}
	return refusedErrors[se.Stop]
}

// refuseFast returns the error of req if its Breaker refuses it outright
// and RoundTrip's usual path would do nothing more than return that error
// and close the body; ok false sends req down the usual path. It reads the
// Policy in place: a copy of one costs more than the rest of a refusal.
func (t *Transport) refuseFast(req *http.Request, opts *options) (err error, ok bool) {
	if t.OnDone != nil || t.Logger != nil || t.Stale != nil || t.Hedger != nil || t.Refresh != nil ||
		t.AutoIdempotencyKey || opts.trace != nil || opts.policy == nil && t.Policies != nil {
		return nil, false
	}
	p := &t.Policy
	if opts.policy != nil {
		p = opts.policy
	}
	g := &t.Guards
	if p.Limiter != nil || g.Limiters != nil || p.OnDone != nil {
		return nil, false
	}
	br := p.Breaker
	if g.Budgets != nil || g.Breakers != nil || g.Throttles != nil {
		// The lookups of Policy.WithGuards, which call.policy makes: the
		// same keys are made, refused or not.
		o := t.originOf(req.URL)
		if p.Budget == nil && g.Budgets != nil {
			g.Budgets.Get(o)
		}
		if br == nil && g.Breakers != nil {
			br = g.Breakers.Get(o)
		}
		if p.Throttle == nil && g.Throttles != nil {
			g.Throttles.Get(o)
		}
	}
	if br == nil || !br.Refuses() {
		return nil, false
	}
	ctx := req.Context()
	// An ended ctx is Do's to report, and inside an outer loop the
	// request may share that loop's Breaker, which Do then leaves out.
	if ctx.Err() != nil || ctx.Value(loopvals.Key{}) != nil || p.Validate() != nil {
		return nil, false
	}
	if req.Body != nil {
		req.Body.Close() // a RoundTripper closes the body, sent or not
	}
	return refusedErrors[retry.StopBreakerOpen], true
}

// originMemo is the origin of one scheme and host, as origin computes it.
type originMemo struct {
	scheme, host, origin string
}

// originMemos remember the origins of the latest hosts a Transport sent
// to, so that a request to one of them builds no string for its origin.
type originMemos struct {
	slots [8]atomic.Pointer[originMemo]
}

var originSeed = maphash.MakeSeed()

// originOf returns origin(u), remembered for u's scheme and host.
func (t *Transport) originOf(u *url.URL) string {
	if u == nil {
		return ""
	}
	slot := &t.origins.slots[maphash.String(originSeed, u.Host)%uint64(len(t.origins.slots))]
	if m := slot.Load(); m != nil && m.host == u.Host && m.scheme == u.Scheme {
		return m.origin
	}
	o := origin(u)
	slot.Store(&originMemo{scheme: u.Scheme, host: u.Host, origin: o})
	return o
}
