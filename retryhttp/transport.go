package retryhttp

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/stormguard/retry"
)

// Transport is an [http.RoundTripper] that sends a request through Base and
// sends it again when an attempt fails in a way that another attempt may fix
// and the request is safe to repeat.
//
// The zero Transport is ready to use: http.DefaultTransport, the zero
// retry.Policy (4 attempts, waits from 200ms doubling to 5s with full
// jitter), [DefaultClassify], keys read from the Idempotency-Key header but
// none generated, Retry-After waited for up to a minute, no credential
// refresh and no logging.
//
// A Transport is safe for concurrent use. It must not be copied after first
// use: it keeps the state of a credential refresh in flight.
type Transport struct {
	// Base sends each attempt [http.DefaultTransport].
	Base http.RoundTripper

	// Policy says how many attempts to make and how long to wait between
	// them; its fields mean what they mean to retry.Do, with two exceptions.
	// Classifier is not used: Classify takes its place. AttemptTimeout and
	// MaxElapsed cut an attempt short only until its response headers
	// arrive, so that the body of the response returned to the caller stays
	// readable after RoundTrip returns; the request's ctx bounds the rest.
	Policy retry.Policy

	// Classify decides whether an attempt is worth another [DefaultClassify].
	// It gets the attempt's response or its error, never both, and never an
	// error of the caller's ctx: the Transport stops then without asking. It
	// must neither read nor close resp.Body. Whatever it says, a request that
	// is not safe to repeat gets no retry, and Decision.After is raised to
	// the response's Retry-After.
	Classify func(resp *http.Response, err error) retry.Decision

	// IdempotencyHeader names the header that carries an idempotency key
	// [Idempotency-Key]. A request that has this header, even with a nil
	// value (which net/http does not send), may be retried whatever its
	// method.
	IdempotencyHeader string

	// AutoIdempotencyKey gives each request that needs a key to be retried
	// (a POST, a PATCH or any method that is not idempotent) and has none a
	// random UUIDv4 key, sent unchanged on every attempt of that request.
	// Set it only for servers that honour the key. A caller's key is never
	// replaced; to resubmit later with the same key, set your own.
	AutoIdempotencyKey bool

	// MaxRetryAfter is the longest Retry-After the Transport waits for [1m].
	// A response that asks for as long or longer is returned at once rather
	// than retried sooner than the server asked.
	MaxRetryAfter time.Duration

	// Refresh, if set, renews credentials after a 401 Unauthorized [none].
	// It gets the request's ctx. It runs at most once per request, and once
	// for all the requests that were sent before it returned: they share its
	// result. The request is then sent again at once, whatever its method
	// (a 401 means the server did not act on it), unless its body cannot be
	// rewound; the resend belongs to the same attempt in the Trace. Every
	// later attempt of the request carries the returned value in its
	// Authorization header; return "" to leave headers alone when Base sets
	// the credentials itself. If Refresh fails, the 401 is returned.
	Refresh func(ctx context.Context) (authorization string, err error)

	// Logger, if set, gets one line for each retry and one when the
	// Transport gives up [none]. See the package doc for what it logs.
	Logger *slog.Logger

	refresh refresher
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
// RoundTrip does not modify req, and closes its body. A panic in Base,
// GetBody or a hook (Classify, Policy.OnRetry, Policy.Jitter, Refresh, the
// Logger) reaches the caller after RoundTrip has ended the attempt in
// flight and closed its response, so that no timer, connection or
// goroutine is left behind.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.newCall(req)
	returned := false
	defer func() {
		if !returned { // Base or user code panicked, or called runtime.Goexit
			c.abandon()
		}
	}()
	p := t.Policy
	if p.AttemptTimeout > 0 { // a negative one is left for Do to reject
		c.timeout, p.AttemptTimeout = p.AttemptTimeout, 0
	}
	p.Classifier = c.decided
	p.OnRetry = c.onRetry(p.OnRetry)
	// Do runs on the request's own ctx, so that a Transport used inside an
	// outer retry loop makes one attempt and leaves retrying to that loop.
	tr, err := retry.Do(req.Context(), c.attempt, p)
	resp, err := c.finish(tr, err)
	returned = true
	return resp, err
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

func (t *Transport) classify() func(*http.Response, error) retry.Decision {
	if t.Classify == nil {
		return DefaultClassify
	}
	return t.Classify
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
