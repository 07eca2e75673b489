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
	cancel  context.CancelCauseFunc // ends the handler's ctx
	rec     recorder
	body    requestBody
	settled bool // completed or released

	// The lease and its renewal; see lease.go.
	mu sync.Mutex
	renewal
}

// requestBody is the request body the handler reads: the bytes the
// middleware read for the fingerprint.
type requestBody struct{ bytes.Reader }

func (*requestBody) Close() error { return nil }

// run runs the handler for a request that holds its key, and settles the
// claim: the response is saved (Complete) before it is sent, or the key is
// released for a response that means nothing was done.
func (h *handler) run(w http.ResponseWriter, r *http.Request, body []byte, key, token string, fp []byte, claimed time.Time) {
	m := h.m
	f := &flight{m: m, key: key, token: token, fp: fp}
	f.rec = recorder{w: w, header: make(http.Header), limit: m.opts.MaxResponseBytes, overflow: f}
	f.body.Reset(body)
	// The handler's ctx ends if the lease is lost, so that a handler that
	// checks it can stop before it does what the new holder will do.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	f.cancel = cancel
	f.startRenewal(claimed)

	returned := false
	defer func() {
		if !returned { // the handler panicked or called runtime.Goexit
			f.stopRenewal()
			if !f.settled {
				// As a crash would after the lease, but at once: the panic
				// says nothing was finished. The panic goes on to net/http.
				f.release()
			}
		}
	}()
	r2 := r.WithContext(ctx)
	r2.Body = &f.body
	r2.ContentLength = int64(len(body))
	h.next.ServeHTTP(&f.rec, r2)
	returned = true
	f.stopRenewal()
	rec := &f.rec
	if f.settled {
		if rec.mode == discarding {
			writeLeaseLost(w, m.opts.Header)
		}
		return
	}
	rec.finish()
	if m.opts.Retryable(rec.status) {
		f.release()
		rec.send()
		return
	}
	err := f.complete(&record{status: rec.status, header: rec.saved, body: rec.body.Bytes()})
	if errors.Is(err, ErrLeaseLost) {
		writeLeaseLost(w, m.opts.Header)
		return
	}
	// On any other error the result is not saved, but the handler's work is
	// done: the client gets its answer rather than a reason to run it again.
	rec.send()
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
	ctx, cancel := f.m.storeCtx(context.Background())
	defer cancel()
	return f.m.opts.Store.Complete(ctx, f.key, f.token, f.fp, rec.encode(), f.m.opts.TTL)
}

func (f *flight) release() {
	f.settled = true
	ctx, cancel := f.m.storeCtx(context.Background())
	defer cancel()
	// If it fails, the lease runs out by itself.
	_ = f.m.opts.Store.Release(ctx, f.key, f.token)
}

// overflow settles the claim when the response body passes
// MaxResponseBytes: a retryable status releases the key; any other saves
// the status and headers without the body. Either way the response then
// streams to the client. If the lease is lost, the rest is discarded.
func (f *flight) overflow() error {
	f.stopRenewal() // a renewal after Complete would report the lease lost
	rec := &f.rec
	if f.m.opts.Retryable(rec.status) {
		f.release()
	} else {
		saved := rec.saved.Clone()
		saved.Del("Content-Length") // a replay has no body
		err := f.complete(&record{status: rec.status, header: saved, omitted: true})
		if errors.Is(err, ErrLeaseLost) {
			rec.mode = discarding
			return ErrLeaseLost
		}
	}
	rec.mode = streaming
	rec.send()
	rec.body = bytes.Buffer{}
	return nil
}
