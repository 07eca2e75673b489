package idempotency

import (
	"net/http"
	"time"

	"github.com/stormguard/retry"
)

// Defaults that a zero field of [Options] stands for.
const (
	defaultHeader           = "Idempotency-Key"
	defaultTTL              = 24 * time.Hour
	defaultLease            = 10 * time.Second
	defaultMaxBodyBytes     = 1 << 20
	defaultMaxResponseBytes = 1 << 20
	defaultStoreTimeout     = 2 * time.Second
	defaultHandlerTimeout   = time.Minute
)

// Options configures a [Middleware]. The zero value is ready to use: see
// each field for what its zero means.
type Options struct {
	// Store keeps keys and results [a MemoryStore with its default bounds,
	// on Clock]. Use a shared store, such as package redisstore's, when more
	// than one process serves the same clients.
	Store Store

	// Header names the request header that carries the key
	// [Idempotency-Key].
	Header string

	// Methods are the methods the middleware applies to [POST, PATCH];
	// requests with other methods pass through untouched.
	Methods []string

	// Required makes a request without a key a 400 [false: it passes
	// through, and runs as if there were no middleware].
	Required bool

	// TTL is how long a result is kept and replayed [24h]. A key sent again
	// after it is a new request.
	TTL time.Duration

	// Lease is how long a request holds its key without renewal [10s, or
	// TTL if that is shorter]. The middleware renews it every Lease/3 while
	// the handler runs, so a slow handler keeps its key; when a process
	// dies mid-request, its key is free again one Lease later, not one TTL
	// later. If no renewal succeeds within a Lease of the start of the last
	// store call that granted it (the store is unreachable), the handler's
	// ctx ends with cause ErrLeaseLost, since another request may take the
	// key from then on. A Lease set longer than TTL is an error: a result
	// would be kept for less time than a request may run.
	Lease time.Duration

	// Scope says whose key it is: a key and its result belong to one scope,
	// so that a result saved for one caller is never replayed to another,
	// and the same key from two callers is two requests [a SHA-256 of every
	// credential the request carries: the Authorization,
	// Proxy-Authorization, Cookie and X-API-Key headers and the TLS client
	// certificate; "" with none of them].
	//
	// The default never replays across two sessions that the middleware
	// can tell apart, but it cannot know which of them is the caller's
	// identity, so it keeps them all, at a cost: a credential that changes
	// between two attempts (a refreshed token, a rotated key, a cookie that
	// an analytics script rewrote) makes the retry look like another
	// caller's request, and it runs again. And callers it cannot tell apart
	// share a scope: anonymous requests all share "", and so do callers
	// that authenticate by a header it does not know. A service that knows
	// its authenticated principal should scope by it, the user or account
	// id (see the example), so that a key stays the caller's whatever
	// credential carries it.
	Scope func(*http.Request) string

	// MaxBodyBytes bounds the request body that the middleware reads to
	// fingerprint the request [1 MiB]; a larger one gets 413 and the
	// handler does not run.
	MaxBodyBytes int64

	// MaxResponseBytes bounds the response body that is saved for replays
	// [1 MiB]. A larger response is sent in full, but only its status and
	// headers are saved: see the package doc.
	MaxResponseBytes int64

	// Retryable reports whether a response with this status means that the
	// request did nothing and may run again [DefaultRetryable]. Such a
	// response is sent but not saved, and the key is released, so a retry
	// runs the handler again. Every other status is saved and replayed.
	Retryable func(status int) bool

	// StoreTimeout bounds each call to the Store [2s]; a call that takes
	// longer counts as a failed store: before the handler runs, the request
	// is answered 503 at StoreTimeout. The middleware keeps this bound
	// itself, whatever the store does with its ctx (a go-redis client
	// ignores ctx deadlines unless its ContextTimeoutEnabled is set): a
	// call it gives up on runs on, on a goroutine of its own, until the
	// store returns, and a claim that succeeds that late is released. Give
	// the store's client timeouts of its own too, so that those goroutines
	// end.
	StoreTimeout time.Duration

	// HandlerTimeout bounds the run of a handler that holds its key [1m]:
	// its ctx ends then (context.DeadlineExceeded), as it ends with cause
	// ErrLeaseLost if the lease is lost. Whatever it answers is saved, or
	// released, by the usual rules: a handler that stops at its deadline
	// without having done anything should answer a retryable status (503).
	HandlerTimeout time.Duration

	// CancelOnDisconnect makes the handler's ctx end when its client goes
	// away, as a plain net/http handler's does [false]. By default, once a
	// request has claimed its key, its handler runs to its end on a ctx
	// that keeps the request's values but not its cancellation: a client
	// that drops its connection or gives up (an attempt timeout) does not
	// stop work in progress, whose result is saved, so that the retry that
	// follows gets it. Cancelled mid-way, such a handler would answer 5xx
	// and release the key, and the retry would do again what was done.
	// Set it only for handlers whose every step up to the answer rolls
	// back when ctx ends.
	CancelOnDisconnect bool

	// Clock tells the time of leases, TTLs and lease renewals [real time].
	// A *clock.Mock of github.com/benbjohnson/clock assigns to it, so that
	// tests move time instead of sleeping. It is the default store's clock
	// too; a Store of your own keeps its own time. Renewals are deadlines
	// on it (WithDeadline), never waits, so any clock works: a
	// retrytest.Clock or a *clock.Mock renews as the test moves time, and
	// an auto-advancing retrytest.NewAutoClock, which moves time only for
	// waits, renews when something else moves it past a renewal.
	Clock retry.Clock

	// OnDone, if set, is called once for each request that carries a key,
	// after its answer is sent, with the request and how it was answered
	// (see [Summary]). Requests without a key, or with a method outside
	// Methods, are not reported. It runs on the request's goroutine: keep it
	// quick. retrydebug.Recorder.RecordIdempotency and
	// retryotel.Observer.RecordIdempotency fit it.
	OnDone func(r *http.Request, s Summary)
}

// DefaultRetryable is the default Options.Retryable. It reports true for
// 408 Request Timeout, 429 Too Many Requests and every 5xx: statuses that
// say "not done, try again". A handler that has committed its effects must
// therefore not answer 5xx, or a retry does them twice; answer 5xx only
// when nothing was done (a rolled-back transaction), or set Retryable.
func DefaultRetryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests ||
		(status >= 500 && status <= 599)
}

// resolve validates o and replaces its zero fields with their defaults.
func (o *Options) resolve() error {
	if o.Header == "" {
		o.Header = defaultHeader
	}
	if o.Methods == nil {
		o.Methods = []string{http.MethodPost, http.MethodPatch}
	}
	if o.TTL == 0 {
		o.TTL = defaultTTL
	}
	if o.Lease == 0 {
		// A default longer than the TTL shrinks to it: the user asked for
		// the TTL and for nothing about leases.
		o.Lease = min(defaultLease, o.TTL)
	}
	if o.Scope == nil {
		o.Scope = credentialScope
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = defaultMaxResponseBytes
	}
	if o.Retryable == nil {
		o.Retryable = DefaultRetryable
	}
	if o.StoreTimeout == 0 {
		o.StoreTimeout = defaultStoreTimeout
	}
	if o.HandlerTimeout == 0 {
		o.HandlerTimeout = defaultHandlerTimeout
	}
	if !isToken(o.Header) {
		return invalid("Header %q is not a valid header name", o.Header)
	}
	if len(o.Methods) == 0 {
		return invalid("Methods is empty: the middleware would do nothing")
	}
	for _, m := range o.Methods {
		if !isToken(m) {
			return invalid("Methods: %q is not a valid method", m)
		}
	}
	// Stores keep time in milliseconds (Redis's PX), so shorter durations
	// would round to nothing.
	switch {
	case o.TTL < time.Millisecond:
		return invalid("TTL %v is below 1ms", o.TTL)
	case o.Lease < time.Millisecond:
		return invalid("Lease %v is below 1ms", o.Lease)
	case o.TTL < o.Lease:
		return invalid("Lease %v is above TTL %v: a result would be kept for less time than a request may run", o.Lease, o.TTL)
	case o.MaxBodyBytes < 0:
		return invalid("MaxBodyBytes %d is negative", o.MaxBodyBytes)
	case o.MaxResponseBytes < 0:
		return invalid("MaxResponseBytes %d is negative", o.MaxResponseBytes)
	case o.StoreTimeout < 0:
		return invalid("StoreTimeout %v is negative", o.StoreTimeout)
	case o.HandlerTimeout < 0:
		return invalid("HandlerTimeout %v is negative", o.HandlerTimeout)
	}
	if o.Store == nil {
		s, err := NewMemoryStore(MemoryOptions{Clock: o.Clock})
		if err != nil {
			return err
		}
		o.Store = s
	}
	return nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}
