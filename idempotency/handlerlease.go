package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Lease is a request's hold on its key as the handler that runs for it sees
// it (see [FromContext]): what a store needs to save the handler's response
// in the handler's own database transaction, in the same commit as the
// handler's effects, so that no crash can come between the two. Package
// github.com/stormguard/retry/idempotency/pgstore does that on PostgreSQL.
//
// A Lease is a value: copy it freely. Its fields identify the claim; its
// methods work only on a Lease that FromContext returned.
type Lease struct {
	// Key is the store key, as the middleware passed it to Store.Claim.
	Key string

	// Token is the claim's fencing token: a save in the handler's
	// transaction must succeed only while this token still holds Key.
	Token string

	// TTL is how long the result is to be kept: Options.TTL.
	TTL time.Duration

	f *flight
}

type leaseKey struct{}

// withLease returns the handler's ctx, carrying the flight for FromContext.
// A ctx under f.hctx carries it already: hctx answers leaseKey.
func withLease(ctx context.Context, f *flight) context.Context {
	if f.lazy {
		return ctx
	}
	return context.WithValue(ctx, leaseKey{}, f)
}

// FromContext returns the lease of the request whose handler runs on ctx,
// or false if ctx is not the ctx of a handler that the middleware runs for
// a claimed key (a request without a key, or with a method the middleware
// does not apply to, runs its handler without a lease).
func FromContext(ctx context.Context) (Lease, bool) {
	f, ok := ctx.Value(leaseKey{}).(*flight)
	if !ok {
		return Lease{}, false
	}
	return Lease{Key: f.key, Token: f.token, TTL: f.m.opts.TTL, f: f}, true
}

var errNoLease = errors.New("idempotency: Lease.Result: not a lease from FromContext")

// Result returns a response encoded as the middleware saves it (the
// result that Store.Complete would be given and Claim hands back to a
// replay), for a store that saves it in the handler's transaction: the
// headers that are never saved (Set-Cookie and the like, see the package
// doc) are left out, and a body longer than Options.MaxResponseBytes is
// left out too, as for a streamed response. It returns an error for a
// Lease that FromContext did not return, a status outside 200–999, a body
// with a status that has none (204, 304), and a status that
// Options.Retryable calls "nothing was done": the middleware never saves
// such a response, so it must not commit with the handler's effects.
//
// Result also tells the middleware that the handler saves its own
// response. When the handler returns having written that same response
// (status, saved headers and body), the middleware sends it without
// calling Store.Complete: if the transaction committed, it saved the
// response; if it rolled back, it took the handler's effects with it and
// the key stays claimed until its lease runs out. So write the response
// only once the transaction has committed. A handler that writes another
// response, or a status that Options.Retryable names, is settled as if it
// had not called Result (its key completed or released), which a store
// that saved the result already must answer as [Store] says: a Complete
// with the same token keeps the result saved first, a Release fails.
func (l Lease) Result(status int, header http.Header, body []byte) ([]byte, error) {
	f := l.f
	if f == nil {
		return nil, errNoLease
	}
	o := &f.m.opts
	switch {
	case status < 200 || status > 999:
		return nil, fmt.Errorf("idempotency: Lease.Result: status %d is not a final status (200-999)", status)
	case o.Retryable(status):
		return nil, fmt.Errorf("idempotency: Lease.Result: status %d means nothing was done (Options.Retryable), so it is never saved: roll back and answer it", status)
	case len(body) > 0 && !bodyAllowed(status):
		return nil, fmt.Errorf("idempotency: Lease.Result: status %d has no body: %w", status, http.ErrBodyNotAllowed)
	}
	rec := &record{status: status, header: header, body: body}
	if int64(len(body)) > o.MaxResponseBytes {
		rec = omittedRecord(status, header)
	}
	b := rec.encode()
	f.mu.Lock()
	f.handlerSaved = b
	f.mu.Unlock()
	return b, nil
}

// omittedRecord is what is saved of a response whose body was larger than
// MaxResponseBytes: its status and headers, but Content-Length and
// Trailer, since a replay has neither a body nor trailers.
func omittedRecord(status int, header http.Header) *record {
	saved := header.Clone()
	saved.Del("Content-Length")
	saved.Del("Trailer")
	return &record{status: status, header: saved, omitted: true}
}

// savedByHandler reports whether the handler saved the response that rec
// holds itself, through Lease.Result: then the middleware sends it without
// a Complete of its own.
func (f *flight) savedByHandler(rec *recorder) bool {
	f.mu.Lock()
	saved := f.handlerSaved
	f.mu.Unlock()
	if saved == nil {
		return false
	}
	r, err := decodeRecord(saved)
	if err != nil || r.omitted || r.status != rec.status || len(rec.trailer) > 0 ||
		!bytes.Equal(r.body, rec.body.Bytes()) {
		return false
	}
	return sameSavedHeader(r.header, rec.saved)
}

// sameSavedHeader reports whether saved, as decoded from a record, is what
// would be saved of h.
func sameSavedHeader(saved, h http.Header) bool {
	n := 0
	for k, vs := range h {
		if notSaved(k) {
			continue
		}
		n++
		if got, ok := saved[k]; !ok || !slices.Equal(got, vs) {
			return false
		}
	}
	return n == len(saved)
}

// handlerResult returns the result the handler saved through Lease.Result,
// or nil.
func (f *flight) handlerResult() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handlerSaved
}

// settleSavedByHandler answers a handler that saved its response in its
// own transaction (Lease.Result, a store's CompleteTx) and wrote nothing:
// the client must get what every replay gets, and only the store knows
// whether that transaction committed. Claim with the request's own token
// asks it without taking anything from another request: a committed
// result comes back Completed, and is sent as the first answer; our claim
// still there means the transaction did not commit, so the key is
// released and the client told to retry (nothing was done); another
// request's claim means the lease was lost.
func (f *flight) settleSavedByHandler(w http.ResponseWriter, p *report) {
	f.settled = true
	ctx, cancel := f.m.storeCtx(f.base)
	defer cancel()
	c, err := f.m.store.Claim(ctx, f.key, f.token, f.fp, f.m.opts.Lease)
	switch {
	case err != nil:
		p.set(OutcomeStoreFailed, http.StatusServiceUnavailable, err)
		writeProblem(w, http.StatusServiceUnavailable, "The idempotency store is unavailable; whether this request's result was saved is not known. Retry to get it.", true)
	case c.State == Completed:
		rec, err := decodeRecord(c.Result)
		if err != nil {
			p.set(OutcomeStoreFailed, http.StatusInternalServerError, err)
			writeProblem(w, http.StatusInternalServerError, "The saved result of this request is unreadable.", false)
			return
		}
		p.set(OutcomeExecuted, rec.status, nil)
		if rec.omitted {
			w.Header()[BodyOmittedHeader] = []string{"true"}
		}
		send(w, rec.status, rec.header, rec.body, rec.trailer, true)
	case c.State == Acquired:
		_ = f.m.store.Release(ctx, f.key, f.token) // if it fails, the lease runs out by itself
		p.set(OutcomeReleased, http.StatusServiceUnavailable, nil)
		writeProblem(w, http.StatusServiceUnavailable, "The handler's transaction did not commit its response; nothing was done. Retry.", true)
	default:
		p.set(OutcomeLeaseLost, http.StatusConflict, ErrLeaseLost)
		writeLeaseLost(w, f.m.opts.Header)
	}
}
