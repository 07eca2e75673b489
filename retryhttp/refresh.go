package retryhttp

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/clocks"
)

// Bounds on credential refreshes, so that a host that always answers 401
// cannot drive the token endpoint into rate limits or lockout, and cannot
// hold a request.
const (
	refreshSpacing    = 5 * time.Second  // between two refreshes of one origin
	maxRefreshSpacing = 5 * time.Minute  // after failures, the spacing doubles up to this
	refreshTimeout    = 30 * time.Second // a refresh on a request without any deadline
	maxOrigins        = 1024             // origins whose credential state is kept
	maxRefused        = 8                // refused credentials remembered per origin
)

var errRefreshPanicked = errors.New("retryhttp: Refresh panicked")

// origins keeps the credential state of each origin, so that a credential
// made for one is never sent to another: a Transport shared by requests to
// several hosts (webhooks to user-supplied URLs, say) stays safe.
type origins struct {
	mu sync.Mutex
	m  map[string]*originAuth
}

// originAuth is one origin's credential state.
type originAuth struct {
	mu       sync.Mutex
	latest   string       // what the newest refresh returned
	refused  []string     // credentials the origin refused and a refresh replaced, the newest last
	last     time.Time    // when the newest refresh ended
	next     time.Time    // no refresh before this
	failures int          // failed refreshes in a row, a new credential refused counting as one
	counted  bool         // a refusal of latest is counted in failures already
	inflight *refreshCall // the refresh running now, shared by every 401 that waits for it
}

type refreshCall struct {
	done   chan struct{} // closed when the refresh has returned
	auth   string
	err    error
	panicV any // what Refresh panicked with, for the request that led it
	// abandoned reports that the refresh failed because its ctx ended: the
	// error says nothing about the credentials, and a request whose own
	// ctx is alive runs the refresh again.
	abandoned bool
}

func (o *origins) get(origin string, create bool) *originAuth {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := o.m[origin]
	if st != nil || !create {
		return st
	}
	if o.m == nil {
		o.m = make(map[string]*originAuth)
	}
	if len(o.m) >= maxOrigins {
		for k := range o.m { // any one: its credentials are asked for again if it comes back
			delete(o.m, k)
			break
		}
	}
	st = &originAuth{}
	o.m[origin] = st
	return st
}

// newer returns the credential to send in place of sent, a request's own
// Authorization, if the origin refused sent and a refresh replaced it; or
// "" to send the request as it is. A request without credentials gets none.
func (o *origins) newer(origin, sent string) string {
	if sent == "" {
		return ""
	}
	st := o.get(origin, false)
	if st == nil {
		return ""
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.latest != "" && slices.Contains(st.refused, sent) {
		return st.latest
	}
	return ""
}

// refusedNewest notes that the origin refused sent, the credential a
// resend carried: if it is the newest, that is a failure of the refresh
// that made it, and the next refresh waits longer.
func (o *origins) refusedNewest(origin, sent string) {
	st := o.get(origin, false)
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.countRefusal(sent)
}

// countRefusal counts a refusal of the newest credential, once per
// credential. st.mu is held.
func (st *originAuth) countRefusal(sent string) {
	if st.latest != "" && sent == st.latest && !st.counted {
		st.failures++
		st.counted = true
		st.next = st.last.Add(spacing(st.failures))
	}
}

// answered notes that a request that carried sent got status: a newest
// credential that works ends the run of failures.
func (o *origins) answered(origin, sent string, status int) {
	if sent == "" || status == http.StatusUnauthorized {
		return
	}
	st := o.get(origin, false)
	if st == nil {
		return
	}
	st.mu.Lock()
	if sent == st.latest {
		st.failures = 0
	}
	st.mu.Unlock()
}

// renew returns the credential to send again a request that carried sent
// and was refused with a 401, and whether there is one. If the origin has a
// newer credential than sent, that is it; if a refresh runs, renew waits for
// it; if the origin's spacing allows, it runs Refresh. It waits no longer
// than ctx, the attempt's loop ctx with its MaxElapsed and ctx deadlines.
func (c *call) renew(ctx context.Context, sent string) (string, bool) {
	st := c.t.auth.get(c.origin(), true)
	for {
		st.mu.Lock()
		if st.latest != "" && sent != st.latest {
			auth := st.latest
			st.mu.Unlock()
			return auth, true
		}
		now := clocks.Now(c.clk)
		st.countRefusal(sent) // sent is the newest credential, or there is none yet
		rc, led := st.inflight, false
		if rc == nil {
			if now.Before(st.next) {
				st.mu.Unlock()
				c.logRefreshSkipped()
				return "", false
			}
			rc, led = &refreshCall{done: make(chan struct{})}, true
			st.inflight = rc
			st.mu.Unlock()
			c.lead(ctx, st, rc, sent)
		} else {
			st.mu.Unlock()
		}
		select {
		case <-rc.done:
		case <-ctx.Done():
			c.logRefreshTimedOut()
			return "", false
		}
		if led && rc.panicV != nil {
			panic(rc.panicV) // as if Refresh had run on this goroutine
		}
		if rc.abandoned && ctx.Err() == nil {
			continue // its leader gave up; this request has time to lead one
		}
		if rc.err != nil {
			c.logRefreshFailed(rc.err)
			return "", false
		}
		return rc.auth, true
	}
}

// lead runs Refresh for every request that waits on rc, on a goroutine of
// its own so that a Refresh that ignores its ctx cannot hold the request
// past its deadlines, and records the result even if Refresh panics.
func (c *call) lead(ctx context.Context, st *originAuth, rc *refreshCall, sent string) {
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		rctx, cancel = context.WithTimeout(ctx, refreshTimeout)
	}
	req := c.req.WithContext(rctx)
	refresh, clk := c.t.Refresh, c.clk
	go func() {
		defer cancel()
		rc.err = errRefreshPanicked // replaced unless Refresh panics
		defer func() {
			if v := recover(); v != nil {
				rc.panicV = v
			}
			end := clocks.Now(clk)
			st.mu.Lock()
			switch {
			case rc.err == nil && rc.auth != "":
				st.latest, st.last, st.counted = rc.auth, end, false
				if !slices.Contains(st.refused, sent) {
					st.refused = append(st.refused, sent)
					if len(st.refused) > maxRefused {
						st.refused = slices.Delete(st.refused, 0, 1)
					}
				}
				st.next = end.Add(spacing(st.failures))
			case rc.abandoned:
			default:
				if rc.err == nil {
					rc.err = errEmptyCredential
				}
				st.failures++
				st.last, st.next = end, end.Add(spacing(st.failures))
			}
			st.inflight = nil
			st.mu.Unlock()
			close(rc.done)
		}()
		rc.auth, rc.err = refresh(rctx, req)
		rc.abandoned = rc.err != nil && rctx.Err() != nil
	}()
}

var errEmptyCredential = errors.New("retryhttp: Refresh returned an empty credential")

// spacing is how long an origin waits between refreshes after failures.
func spacing(failures int) time.Duration {
	return min(refreshSpacing<<min(failures, 10), maxRefreshSpacing)
}

// unauthorized handles a 401 to attempt a: it gets a newer credential for
// the origin, and sends the request again with it, once per request, if
// the request may be repeated. Otherwise the 401 stands.
func (c *call) unauthorized(loop context.Context, a *attempt) (*attempt, error) {
	switch {
	case a.auth == "":
		// A request that carried no credential (a redirect to another host
		// strips it) did not have one refused: nothing to renew.
		return a, nil
	case c.resent:
		c.t.auth.refusedNewest(c.origin(), a.auth)
		return a, nil
	}
	auth, ok := c.renew(loop, a.auth)
	if !ok {
		return a, nil
	}
	c.auth = auth
	if !c.rewindable || c.keyless {
		// The server may have acted before it refused the request: it is
		// not sent again, but the caller's next request gets the new
		// credential.
		return a, nil
	}
	c.resent = true
	c.status, c.err = a.resp.StatusCode, nil
	c.logRetry(c.n, statusText(http.StatusUnauthorized)+"; credentials refreshed", 0)
	a.discard(c.drainLimit(loop))
	return c.send(loop)
}

// refreshReason names a refresh's error for the log, without its text: a
// token endpoint's URL may carry a client secret.
func refreshReason(err error) string {
	return retry.DefaultClassifier(context.Background(), retry.Attempt{Err: err}).Reason
}
