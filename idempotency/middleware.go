package idempotency

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
)

// Middleware makes the handlers it wraps answer each idempotency key once:
// the first request with a key runs the handler and its response is saved;
// the same request sent again gets that response replayed. See the package
// doc for every rule.
//
// A Middleware is safe for concurrent use, and one may wrap many handlers:
// they share its store, so a key's scope should tell them apart if their
// keys can meet (a client's keys are random, so they rarely do).
type Middleware struct {
	opts     Options
	inMemory bool // the store is a MemoryStore, which never blocks
}

// New returns a Middleware configured by opts. Invalid options give an
// error that names the field and matches [ErrInvalidOptions].
func New(opts Options) (*Middleware, error) {
	opts.Methods = slices.Clone(opts.Methods)
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	_, inMemory := opts.Store.(*MemoryStore)
	return &Middleware{opts: opts, inMemory: inMemory}, nil
}

// Handler returns a handler that applies the middleware to the requests of
// next. A nil next answers 404, as a ServeMux does when nothing matches.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	if next == nil {
		next = http.NotFoundHandler()
	}
	return &handler{m: m, next: next}
}

type handler struct {
	m    *Middleware
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := h.m
	if !slices.Contains(m.opts.Methods, r.Method) {
		h.next.ServeHTTP(w, r)
		return
	}
	vals := r.Header.Values(m.opts.Header)
	switch {
	case len(vals) == 0 && m.opts.Required:
		writeProblem(w, http.StatusBadRequest, "This request needs an "+m.opts.Header+" header.", false)
		return
	case len(vals) == 0:
		h.next.ServeHTTP(w, r)
		return
	case len(vals) > 1:
		writeProblem(w, http.StatusBadRequest, "The request has more than one "+m.opts.Header+" header.", false)
		return
	}
	key, err := parseKey(vals[0])
	if err != nil {
		writeProblem(w, http.StatusBadRequest, "Malformed "+m.opts.Header+": "+err.Error()+".", false)
		return
	}
	body, status := m.readBody(r)
	if status != 0 {
		detail := "The request body could not be read."
		if status == http.StatusRequestEntityTooLarge {
			detail = "The request body is larger than this endpoint accepts with an " + m.opts.Header + "."
		}
		writeProblem(w, status, detail, false)
		return
	}
	fp := fingerprint(r, body)
	skey := storeKey(m.opts.Scope(r), key)

	token, claimed := newToken(), m.now() // the lease runs from the call's start
	ctx, cancel := m.storeCtx(r.Context())
	c, err := m.opts.Store.Claim(ctx, skey, token, fp, m.opts.Lease)
	cancel()
	switch {
	case err != nil:
		// Fail closed: without the store, nothing tells whether this key ran.
		writeProblem(w, http.StatusServiceUnavailable, "The idempotency store is unavailable; the request was not processed.", true)
	case c.State == Acquired:
		h.run(w, r, body, skey, token, fp, claimed)
	case c.State != InFlight && c.State != Completed:
		writeProblem(w, http.StatusServiceUnavailable, "The idempotency store gave an invalid answer; the request was not processed.", true)
	// A different request under the same key is refused before anything
	// else, in flight or not: the client has a bug that waiting won't fix.
	case !bytes.Equal(c.Fingerprint, fp):
		writeProblem(w, http.StatusUnprocessableEntity, "This "+m.opts.Header+" was used for a different request (method, path, query, content type or body).", false)
	case c.State == InFlight:
		writeProblem(w, http.StatusConflict, "A request with this "+m.opts.Header+" is being processed; retry later to get its result.", true)
	default:
		replay(w, c.Result)
	}
}

// readBody reads the request body for the fingerprint, up to MaxBodyBytes.
// A non-zero status says why it could not: 413 or 400. A body of known
// length is read into a slice of that length, with no growing.
func (m *Middleware) readBody(r *http.Request) ([]byte, int) {
	if r.ContentLength > m.opts.MaxBodyBytes {
		return nil, http.StatusRequestEntityTooLarge
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, 0
	}
	var (
		body []byte
		err  error
	)
	if r.ContentLength > 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, m.opts.MaxBodyBytes+1))
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge), int64(len(body)) > m.opts.MaxBodyBytes:
		return nil, http.StatusRequestEntityTooLarge
	case err != nil:
		return nil, http.StatusBadRequest
	}
	return body, 0
}

// replay sends a saved result.
func replay(w http.ResponseWriter, result []byte) {
	rec, err := decodeRecord(result)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, "The saved result of this request is unreadable.", false)
		return
	}
	w.Header().Set(ReplayedHeader, "true")
	if rec.omitted {
		w.Header().Set(BodyOmittedHeader, "true")
	}
	send(w, rec.status, rec.header, rec.body)
}

// Headers that a replay carries.
const (
	// ReplayedHeader is set to "true" on every replayed response, as
	// Stripe does: the handler did not run for this request.
	ReplayedHeader = "Idempotent-Replayed"

	// BodyOmittedHeader is set to "true" on a replay whose original body
	// was larger than Options.MaxResponseBytes and was not saved: the
	// replay has the original status and headers and an empty body.
	BodyOmittedHeader = "Idempotent-Body-Omitted"
)
