package idempotency

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// flight is one request that holds its key while its handler runs: the
// response it records, the renewal of its lease, and the end of its claim,
// completed or released once. It is one allocation, since every request
// with a fresh key makes one.
type flight struct {
	m       *Middleware
	key     string
	token   string
	fp      []byte                  // the request's fingerprint, saved with its result
	ctx     context.Context         // the handler's
	cancel  context.CancelCauseFunc // ends ctx; endCtx ends it and its deadline
	stop    func()                  // releases ctx's deadline, if it is not hctx
	base    context.Context         // the parent of its store calls' ctx: counts them in its report
	rec     recorder
	body    requestBody
	settled bool // completed or released

	// The lease and its renewal; see lease.go.
	mu sync.Mutex
	renewal
	handlerSaved []byte // the response the handler saved itself, guarded by mu; see handlerlease.go

	// Until its first deadline, on real time: see sweep.go.
	swept bool // on the sweeper until then, rather than on timers of its own
	sweepLinks
	hctx deadlineCtx // ctx's HandlerTimeout, if lazy
	lazy bool
}

// requestBody is the request body the handler reads: the bytes the
// middleware read for the fingerprint.
type requestBody struct{ bytes.Reader }

func (*requestBody) Close() error { return nil }

// run runs the handler for a request that holds its key, and settles the
// claim: the response is saved (Complete) before it is sent, or the key is
// released for a response that means nothing was done. It says in p how
// the request was answered.
func (h *handler) run(w http.ResponseWriter, r *http.Request, body []byte, key, token string, fp []byte, claimed time.Time, p *report) {
	m := h.m
	f := &flight{m: m, key: key, token: token, fp: fp, base: p.ctx(context.Background())}
	f.rec = recorder{w: w, header: make(http.Header), limit: m.opts.MaxResponseBytes, overflow: f}
	f.body.Reset(body)
	f.swept = m.opts.Clock == nil && !inBubble(time.Now())
	f.startContext(r)
	defer f.endCtx(nil)
	f.startRenewal(claimed)

	returned := false
	defer func() {
		if !returned { // the handler panicked or called runtime.Goexit
			f.stopRenewal()
			// As a crash would after the lease, but at once: the panic says
			// nothing was finished, even past MaxResponseBytes, where part of
			// the response is out. The panic goes on to net/http.
			f.release()
			status := 0 // net/http sends nothing, or what was streamed
			if f.rec.mode == streaming {
				status = f.rec.status
			}
			p.set(OutcomeReleased, status, nil)
		}
	}()
	r2 := r.WithContext(withLease(f.ctx, f))
	r2.Body = &f.body
	r2.ContentLength = int64(len(body))
	h.next.ServeHTTP(&f.rec, r2)
	returned = true
	f.stopRenewal()
	rec := &f.rec
	switch rec.mode {
	case discarding:
		f.settleDiscarded(w, p)
		return
	case streaming:
		// The response is out; what is left is to settle the claim.
		if m.opts.Retryable(rec.status) {
			f.release()
			p.set(OutcomeReleased, rec.status, nil)
			return
		}
		if err := f.complete(omittedRecord(rec.status, rec.saved)); err != nil {
			p.set(OutcomeLeaseLost, rec.status, err)
			return
		}
		p.set(OutcomeExecuted, rec.status, nil)
		return
	}
	if rec.status == 0 && f.handlerResult() != nil {
		f.settleSavedByHandler(w, p)
		return
	}
	rec.finish()
	if m.opts.Retryable(rec.status) {
		f.release()
		p.set(OutcomeReleased, rec.status, nil)
		rec.send(true)
		return
	}
	if f.savedByHandler(rec) { // in the handler's transaction, with its effects
		p.set(OutcomeExecuted, rec.status, nil)
		rec.send(true)
		return
	}
	err := f.complete(&record{status: rec.status, header: rec.saved, trailer: rec.trailer, body: rec.body.Bytes()})
	if errors.Is(err, ErrLeaseLost) {
		p.set(OutcomeLeaseLost, http.StatusConflict, err)
		writeLeaseLost(w, m.opts.Header)
		return
	}
	// On any other error the result is not saved, but the handler's work is
	// done: the client gets its answer rather than a reason to run it again.
	if err != nil {
		p.set(OutcomeLeaseLost, rec.status, err)
	} else {
		p.set(OutcomeExecuted, rec.status, nil)
	}
	rec.send(true)
}

// settleDiscarded settles the claim of a response whose body passed
// MaxResponseBytes after the lease was lost, so that none of it was sent:
// as for any response, the key is released for a retryable status, and
// otherwise its status and headers are saved, which Complete does if
// nobody took the key over. The client then gets what a replay would send;
// if another request holds the key, it is sent to get that one's result.
func (f *flight) settleDiscarded(w http.ResponseWriter, p *report) {
	m, rec := f.m, &f.rec
	if m.opts.Retryable(rec.status) {
		f.release()
		p.set(OutcomeReleased, http.StatusConflict, nil)
		writeLeaseLost(w, m.opts.Header)
		return
	}
	saved := omittedRecord(rec.status, rec.saved)
	err := f.complete(saved)
	if errors.Is(err, ErrLeaseLost) {
		p.set(OutcomeLeaseLost, http.StatusConflict, err)
		writeLeaseLost(w, m.opts.Header)
		return
	}
	// As for a small response, on another error too: the work is done.
	if err != nil {
		p.set(OutcomeLeaseLost, rec.status, err)
	} else {
		p.set(OutcomeExecuted, rec.status, nil)
	}
	w.Header()[BodyOmittedHeader] = []string{"true"}
	send(w, saved.status, saved.header, nil, nil, true)
}

// startContext makes the ctx that the handler of a claimed request runs
// on. Once a request holds its key, its client's departure (a dropped
// connection, a client's attempt timeout) must not stop work in progress:
// its retry would do again what was done. So the ctx keeps the request's
// values but not its cancellation (unless CancelOnDisconnect), and ends at
// HandlerTimeout instead, on Options.Clock; the lease renewal ends it too,
// with cause ErrLeaseLost (see lease.go). On the sweeper and without
// CancelOnDisconnect, HandlerTimeout is a deadlineCtx, which needs no
// timer for a handler that returns before its first deadline.
func (f *flight) startContext(r *http.Request) {
	m := f.m
	parent := r.Context()
	if !m.opts.CancelOnDisconnect {
		parent = context.WithoutCancel(parent)
	}
	switch {
	case m.opts.Clock != nil:
		// A deadline, not a wait (WithTimeout): a fake clock that skips or
		// reports waits, such as retrytest's, must see only the handler's
		// own waits; the renewals are deadlines on it too (lease.go).
		parent, f.stop = m.opts.Clock.WithDeadline(parent, m.opts.Clock.Now().Add(m.opts.HandlerTimeout))
	case m.opts.CancelOnDisconnect, !f.swept:
		parent, f.stop = context.WithTimeout(parent, m.opts.HandlerTimeout)
	default:
		f.hctx.init(f, parent, time.Now().Add(m.opts.HandlerTimeout))
		f.lazy, parent = true, &f.hctx
	}
	f.ctx, f.cancel = context.WithCancelCause(parent)
}

// endCtx ends the handler's ctx with cause, and releases its deadline.
func (f *flight) endCtx(cause error) {
	f.cancel(cause)
	if f.lazy {
		f.hctx.stop()
	} else {
		f.stop()
	}
}

// handOver gives a flight still running at its first deadline timers of
// its own: its renewal's and its HandlerTimeout's (see sweep.go).
func (f *flight) handOver() {
	f.mu.Lock()
	if !f.stopped {
		f.armAt(f.due)
	}
	f.mu.Unlock()
	if f.lazy {
		f.hctx.arm()
	}
}

// writeLeaseLost answers a request whose handler ran but whose lease ran
// out first: another request holds the key now and its result is the one
// kept, so the client is sent to get it rather than given a response that
// no replay would repeat.
func writeLeaseLost(w http.ResponseWriter, header string) {
	writeProblem(w, http.StatusConflict, "This request lost its hold on its "+header+" to a retry of it; retry later to get that request's result.", true)
}

func (f *flight) complete(rec *record) error {
	f.settled = true
	// The client may be gone, and with it r.Context(): the result is saved
	// all the same, since the retry that follows will ask for it.
	ctx, cancel := f.m.storeCtx(f.base)
	defer cancel()
	return f.m.store.Complete(ctx, f.key, f.token, f.fp, rec.encode(), f.m.opts.TTL)
}

func (f *flight) release() {
	if f.settled {
		return
	}
	f.settled = true
	ctx, cancel := f.m.storeCtx(f.base)
	defer cancel()
	// If it fails, the lease runs out by itself.
	_ = f.m.store.Release(ctx, f.key, f.token)
}

// overflow is called when the response body passes MaxResponseBytes: what
// is held is sent and the rest streams to the client as the handler writes
// it, while the key stays claimed (and renewed). The claim is settled when
// the handler returns: the status and headers are saved without the body,
// or the key is released for a retryable status or a panic. If the lease
// is lost already, nothing is sent: the rest is discarded.
func (f *flight) overflow() error {
	rec := &f.rec
	if errors.Is(context.Cause(f.ctx), ErrLeaseLost) {
		rec.mode = discarding
		return ErrLeaseLost
	}
	rec.mode = streaming
	rec.send(false)
	rec.body = bytes.Buffer{}
	return nil
}
