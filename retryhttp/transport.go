package retryhttp

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryconfig"
)

// Transport is an [http.RoundTripper] that sends a request through Base and
// sends it again when an attempt fails in a way that another attempt may fix
// and the request is safe to repeat.
//
// The zero Transport is ready to use: http.DefaultTransport, the zero
// retry.Policy (4 attempts, a backoff from 200ms doubling to 5s with full
// jitter) with [DefaultClassifier], keys read from the Idempotency-Key
// header but none generated, Retry-After waited for up to a minute, an
// origin whose quota is used up held until its reset, no credential
// refresh, no attempt header, no logging, no stale answers.
//
// A Transport is safe for concurrent use. It must not be copied after first
// use: it keeps the credential state of each origin.
type Transport struct {
	// Base sends each attempt [http.DefaultTransport].
	Base http.RoundTripper

	// Policy says how many attempts to make, how long to wait between them
	// and which failures are worth another: its fields mean what they mean
	// to retry.Do, with these differences. The Classifier
	// [DefaultClassifier] sees an attempt answered with a status of 400 or
	// more, or failed by CheckResponse, as a *StatusError; any other
	// response is a success. AttemptTimeout
	// and MaxElapsed cut an attempt short only until its response headers
	// arrive, so that the body of the response returned to the caller stays
	// readable after RoundTrip returns; the request's ctx bounds the rest.
	// A request's own Policy, from [WithPolicy], takes its place.
	Policy retry.Policy

	// Policies, if set, takes the place of Policy: each request takes the
	// policy named by [WithPolicyName] (else "default") from the Config
	// current when the request starts, with the retryableStatusCodes that
	// the Config lists for it (in place of DefaultClassifier's statuses). A
	// request's own Policy, from [WithPolicy], still wins.
	Policies *retryconfig.Live

	// Guards gives each origin (scheme, host and port) a Budget, a
	// Breaker, a Throttle and a Limiter of its own from its sets, for a
	// Policy without one, so that a failing or slow host cannot use up the
	// retries of the others, open their breaker, shed their requests or
	// take their slots [none: only the Policy's own, shared by every
	// origin]. Guards.Holds, if set, keeps
	// the holds (see Hold), so that other integrations can share them;
	// else the Transport keeps its own.
	Guards guard.Keyed

	// IdempotencyHeader names the header that carries an idempotency key
	// [Idempotency-Key]. A request with a non-empty value under this name,
	// in any letter case, may be retried whatever its method. A response
	// with Idempotent-Replayed: true is a server's saved answer for its key
	// (see package idempotency), the same on every retry: it is returned,
	// never retried, whatever its status.
	IdempotencyHeader string

	// AutoIdempotencyKey gives each request that needs a key to be retried
	// (a POST, a PATCH or any method that is not idempotent) and has none a
	// random UUIDv4 key, sent unchanged on every attempt of that request.
	// Inside an outer retry loop (a retry.Do or retry.Hedge whose op sends
	// the request, or a Transport whose Base this one is), the key belongs
	// to that loop's logical call: every outer attempt that sends the same
	// write again (same method, URL and body; a body without GetBody is
	// known by its length) sends the same key, and two different writes get
	// two keys; an op that means to send the same write twice must give the
	// second a key of its own. Set it only for servers that honour the key.
	// A caller's key is never replaced; to resubmit later with the same key
	// (after a restart, say), set your own: the key belongs to the user's
	// intent, not to a request.
	AutoIdempotencyKey bool

	// AttemptHeader, if set, names a header that carries the attempt number
	// on every attempt ("1", "2", …), so that servers and proxies can tell a
	// retry from a first try [none]. "Retry-Attempt" is a good name;
	// Envoy's x-envoy-attempt-count means the same.
	AttemptHeader string

	// Hold says what happens to new attempts to a host that answered 429
	// or 503 with a Retry-After, or whose quota is used up (see Quota):
	// they wait until then, fail at once, or are sent as if nothing were
	// known [HoldWait]. See [HoldMode].
	Hold HoldMode

	// MaxRetryAfter is the longest Retry-After the Transport waits for [1m].
	// A response that asks for as long or longer is returned at once rather
	// than retried sooner than the server asked.
	MaxRetryAfter time.Duration

	// Quota says what responses that announce their origin's quota do
	// (RateLimit, X-RateLimit-Remaining and X-RateLimit-Reset): one that
	// says it is used up holds the origin until the reset, as a
	// Retry-After does; QuotaSpread also paces the requests left over the
	// window; QuotaOff ignores them [QuotaHold]. See [QuotaMode].
	Quota QuotaMode

	// Refresh, if set, renews credentials after a 401 Unauthorized [none].
	// See [Transport.RoundTrip] for when it runs; it gets the refused
	// request, to know which origin it serves, and must return the
	// Authorization value for that origin.
	Refresh func(ctx context.Context, req *http.Request) (authorization string, err error)

	// Logger, if set, gets one line for each retry and one when the
	// Transport gives up [none]. See the package doc for what it logs.
	Logger *slog.Logger

	// LogSampling thins out the Logger's lines while an origin keeps
	// failing [the first 5 lines of each streak, then one summary a
	// minute]. Set Off to write every line. See [LogSampling].
	LogSampling LogSampling

	// Hedger, if set, hedges reads (GET, HEAD, OPTIONS): when no attempt
	// has answered for the Hedger's delay, another copy is sent, and the
	// first answer that is not a failure wins; the others are canceled,
	// and their responses drained and closed [none]. Only Transports
	// without Refresh hedge. See retry.Hedger.
	Hedger *retry.Hedger

	// HedgeWrites lets the Hedger hedge the writes that are safe to
	// repeat too: PUT, DELETE, and requests with an idempotency key, each
	// with a body GetBody can replay [false]. Set it only where a copy's
	// answer is as good as the first's: a copy's quick 404 or 412 can beat
	// the first copy's 2xx and end the request.
	HedgeWrites bool

	// CheckResponse, if set, judges every response, whatever its status,
	// before the Classifier does [none]: for an API that answers a failure
	// with a 200 and says so in its body (GraphQL's "errors", a legacy
	// "status": "busy"). head is the start of the body: up to 4 KiB, read
	// for at most 100ms (less if the body ends, or within the request's
	// deadlines); the body of a response returned to the caller still
	// reads from its first byte. CheckResponse must not read or close
	// resp.Body, nor modify head, and may be called concurrently. A
	// non-nil error fails the attempt: the Classifier sees a *StatusError
	// with the status and the error in Err, which [DefaultClassifier]
	// retries unless the error is marked with retry.Permanent. nil leaves
	// the response to its status. Every response waits for its peek: set
	// it on a Transport for an API whose bodies come at once, not for
	// streams.
	CheckResponse func(resp *http.Response, head []byte) error

	// OnDone, if set, is called once for each request when RoundTrip is
	// about to return, with the request's ctx and a [Summary] of it: the
	// hook for metrics and debug pages [none]. When Base or a hook panics,
	// it is called before the panic goes on, with a Summary whose Err is
	// not nil and whose Trace is as far as the attempts got (its Stop is
	// retry.StopPanicked for a panic during them). A panic in OnDone
	// itself reaches the caller after RoundTrip has closed the response.
	OnDone func(ctx context.Context, s Summary)

	// Stale, if set, keeps the successful responses to GET and HEAD
	// requests, and answers a request that failed for good with the one
	// stored for it, when its origin allowed that (Cache-Control:
	// stale-if-error, RFC 5861) or the caller asked ([WithStaleIfError])
	// [none]. See [StaleCache] for what is stored, and docs/http.md for
	// the rules.
	Stale *StaleCache

	auth    origins     // credential state, per origin
	held    guard.Holds // hosts that asked to be held back, per origin, unless Guards.Holds
	paced   pacer       // origins whose quota paces their requests (QuotaSpread)
	sampler logSampler  // the Logger's groups of similar lines
	watched watched     // the breakers and throttles whose changes the Logger gets
	origins originMemos // the origins of the latest hosts
}

// NewClient returns an [http.Client] whose Transport retries with p over
// [http.DefaultTransport]. For more settings, set the fields of a
// [Transport] and put it in a Client of your own.
func NewClient(p retry.Policy) *http.Client {
	return &http.Client{Transport: &Transport{Policy: p}}
}

// RoundTrip implements [http.RoundTripper]. It returns the last attempt's
// response, unread, even when that response asked for a retry that did not
// happen; or, when the last attempt had no response, an error that matches
// both why retrying stopped (retry.ErrExhausted, retry.ErrDeadline, …) and
// that attempt's error. An error the Transport would not retry comes marked
// with retry.Permanent, so that an outer retry loop does not retry it either.
// With Stale, a GET or HEAD that failed for good may be answered instead
// with a stored response, which [IsStale] reports.
//
// Inside an outer retry loop (a retry.Do whose op makes the request), the
// Transport makes one attempt and leaves retrying to that loop. A
// retryable status is then returned as an error, not as a response: the
// response is drained and closed, and the error is a retry.StopError that
// wraps a [*StatusError] and carries the response's Retry-After as
// retry.RetryAfter. So an op that checks only the error still has its
// failure retried, and an outer loop never retries less than the
// Transport alone would have.
//
// On a 401, Refresh runs only if the request carried an Authorization
// header (a redirect to another host strips it) and that credential is the
// newest for its origin; a request that carried an older one is sent again
// with the newest, without a refresh. Each origin (scheme, host, port) has
// its own credentials: one is never sent to another origin, nor from https
// to http. Refreshes of one origin are spaced at least 5s apart; a failed
// one (an error, or a new credential refused at once) doubles the spacing,
// up to 5 minutes. Concurrent 401s share one refresh. Refresh runs within
// the request's MaxElapsed and ctx deadline; a request that cannot wait for
// it gets its 401. The request is then sent again, once, if it is safe to
// repeat; the resend belongs to the same attempt in the Trace. Later
// requests to the origin that carry the refused credential carry the new
// one instead.
//
// RoundTrip does not modify req, and closes its body. A panic in Base,
// GetBody or a hook (the Classifier, Policy.OnRetry and OnDone, the Jitter,
// Refresh, the Logger, OnDone) reaches the caller after RoundTrip has ended
// the attempt in flight and closed its response, so that no timer,
// connection or goroutine is left behind.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	opts := optionsOf(req.Context())
	if err, ok := t.refuseFast(req, &opts); ok {
		return nil, err
	}
	req = withPriority(req, opts)
	c := t.newCall(req, opts)
	returned := false
	defer func() {
		if !returned { // Base or user code panicked, or called runtime.Goexit
			c.abandon()
			c.donePanicked()
		}
	}()
	hedged := c.hedgeable()
	p := c.policy(hedged)
	var resp *http.Response
	var tr retry.Trace
	var err error
	if hedged {
		resp, tr, err = c.roundTripHedged(p)
	} else {
		resp, tr, err = c.roundTrip(p)
	}
	resp, tr, err = c.stale(resp, tr, err)
	if t.OnDone != nil {
		c.reported = true
		t.OnDone(req.Context(), c.summary(tr, resp, err))
	}
	returned = true
	return resp, err
}

// keepDone wraps the Policy's OnDone so that the call keeps the Trace and
// error the loop ends with.
func (c *call) keepDone(next func(context.Context, retry.Trace, error)) func(context.Context, retry.Trace, error) {
	c.done = new(loopEnd)
	return func(ctx context.Context, tr retry.Trace, err error) {
		c.done.trace, c.done.err = tr, err
		if next != nil {
			next(ctx, tr, err)
		}
	}
}

// donePanicked calls OnDone for a request that a panic ended, unless OnDone
// ran already (and so is what panicked). Its Summary has the Trace as far
// as the loop got: Stop is retry.StopPanicked when the panic came up during
// the attempts, in Base or a hook of the loop's; for one after them (the
// Logger giving up, say) it is the loop's own Stop. Err is never nil.
func (c *call) donePanicked() {
	if c.t.OnDone == nil || c.reported {
		return
	}
	c.reported = true
	var end loopEnd // a panic before the loop began leaves c.done nil
	if c.done != nil {
		end = *c.done
	}
	err := end.err
	if end.trace.Stop() != retry.StopPanicked || err == nil {
		err = errPanicked
	}
	c.t.OnDone(c.req.Context(), c.summary(end.trace, nil, err))
}

// policy is the one place where a request's Policy is made from the
// Transport's: the request's own, Policies' named one, or Policy; the
// DefaultClassifier; the origin's guards; the OnDone that keeps the end
// for the Summary; the AttemptTimeout, which the call applies itself from
// when an attempt is sent (not from when it waits for a hold); and the
// Classifier that the Transport's rules wrap (idempotency, Retry-After,
// replays; a hedged request's held copies) and, unhedged, the OnRetry
// that logs.
func (c *call) policy(hedged bool) retry.Policy {
	t, opts := c.t, c.opts
	p := t.Policy
	if opts.policy != nil {
		p = *opts.policy
	} else if t.Policies != nil {
		cfg := t.Policies.Config()
		p = NamedPolicy(cfg, opts.policyName)
		c.quota = configuredQuota(cfg, opts.policyName, t.Quota)
		c.configStale = namedStale(cfg, opts.policyName)
	}
	c.clk = p.Clock
	if p.Classifier == nil {
		p.Classifier = DefaultClassifier
	}
	if g := &t.Guards; g.Budgets != nil || g.Breakers != nil || g.Throttles != nil || g.Limiters != nil {
		// The origin is worked out only for the sets that need it: a
		// string per request otherwise.
		p = p.WithGuards(g, c.origin())
	}
	t.watchGuards(&p)
	if t.OnDone != nil {
		// Observed: keep what the loop reports, a panic included, for an
		// OnDone that a panic leaves to RoundTrip's deferred call. That
		// also has the loop time the first attempt, as it does for an
		// OnDone of its own, so that Summary.Trace spans the request.
		p.OnDone = c.keepDone(p.OnDone)
	}
	if p.AttemptTimeout > 0 { // a negative one is left for Do to reject
		c.timeout, p.AttemptTimeout = p.AttemptTimeout, 0
	}
	if hedged {
		p.Classifier = c.hedgeDecider(p.Classifier)
	} else {
		p.Classifier = c.decider(p.Classifier)
		p.OnRetry = c.onRetry(p.OnRetry)
	}
	return p
}

// roundTrip is RoundTrip for a request that is not hedged: its attempts,
// one at a time, through retry.Do.
func (c *call) roundTrip(p retry.Policy) (*http.Response, retry.Trace, error) {
	// Do runs on the request's own ctx, so that a Transport used inside an
	// outer retry loop makes one attempt and leaves retrying to that loop.
	tr, err := retry.Do(c.req.Context(), c.attempt, p)
	resp, err := c.finish(tr, err)
	return resp, tr, err
}

// CloseIdleConnections closes the idle connections of Base, if it has a
// CloseIdleConnections method, as [http.Client.CloseIdleConnections] expects.
func (t *Transport) CloseIdleConnections() {
	if b, ok := t.base().(interface{ CloseIdleConnections() }); ok {
		b.CloseIdleConnections()
	}
}

func (t *Transport) base() http.RoundTripper {
	if t.Base == nil {
		return http.DefaultTransport
	}
	return t.Base
}

func (t *Transport) idempotencyHeader() string {
	if t.IdempotencyHeader == "" {
		return defaultIdempotencyHeader
	}
	return http.CanonicalHeaderKey(t.IdempotencyHeader)
}

func (t *Transport) maxRetryAfter() time.Duration {
	if t.MaxRetryAfter <= 0 {
		return defaultMaxRetryAfter
	}
	return t.MaxRetryAfter
}
