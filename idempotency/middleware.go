package idempotency

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"time"
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
	store    Store  // opts.Store, each call bounded by StoreTimeout and counted
	inMemory bool   // the store is a MemoryStore, which never blocks
	header   string // opts.Header in canonical form, to index a request's header without canonicalizing it for each request
	sweep    sweeper
}

// New returns a Middleware configured by opts. Invalid options give an
// error that names the field and matches [ErrInvalidOptions].
func New(opts Options) (*Middleware, error) {
	opts.Methods = slices.Clone(opts.Methods)
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	_, inMemory := opts.Store.(*MemoryStore)
	m := &Middleware{opts: opts, inMemory: inMemory, header: http.CanonicalHeaderKey(opts.Header)}
	m.store = &boundedStore{s: opts.Store, timeout: opts.StoreTimeout, clk: opts.Clock, direct: inMemory}
	return m, nil
}

// now tells the time on Options.Clock.
func (m *Middleware) now() time.Time {
	if m.opts.Clock == nil {
		return time.Now()
	}
	return m.opts.Clock.Now()
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
	vals := r.Header[m.header] // Header.Values, but for the canonicalization
	switch {
	case len(vals) == 0 && m.opts.Required:
		writeProblem(w, http.StatusBadRequest, "This request needs an "+m.opts.Header+" header.", false)
		return
	case len(vals) == 0:
		h.next.ServeHTTP(w, r)
		return
	}
	p := m.newReport()
	if p != nil {
		defer p.done(m, r) // deferred: a panicking handler is reported too
	}
	h.serveKeyed(w, r, vals, p)
}

// serveKeyed answers a request that carries a key, and says how in p.
func (h *handler) serveKeyed(w http.ResponseWriter, r *http.Request, vals []string, p *report) {
	m := h.m
	reject := func(status int, detail string) {
		p.set(OutcomeRejected, status, nil)
		writeProblem(w, status, detail, false)
	}
	if len(vals) > 1 {
		reject(http.StatusBadRequest, "The request has more than one "+m.opts.Header+" header.")
		return
	}
	key, err := parseKey(vals[0])
	if err != nil {
		reject(http.StatusBadRequest, "Malformed "+m.opts.Header+": "+err.Error()+".")
		return
	}
	body, status := m.readBody(r)
	if status != 0 {
		detail := "The request body could not be read."
		if status == http.StatusRequestEntityTooLarge {
			detail = "The request body is larger than this endpoint accepts with an " + m.opts.Header + "."
		}
		reject(status, detail)
		return
	}
	fp := fingerprint(r, body)
	skey := storeKey(m.opts.Scope(r), key)

	token, claimed := newToken(), m.now() // the lease runs from the call's start
	ctx, cancel := m.storeCtx(p.ctx(r.Context()))
	c, err := m.store.Claim(ctx, skey, token, fp, m.opts.Lease)
	cancel()
	switch {
	case err != nil:
		// Fail closed: without the store, nothing tells whether this key ran.
		p.set(OutcomeStoreFailed, http.StatusServiceUnavailable, err)
		writeProblem(w, http.StatusServiceUnavailable, "The idempotency store is unavailable; the request was not processed.", true)
	case c.State == Acquired:
		h.run(w, r, body, skey, token, fp, claimed, p)
	case c.State != InFlight && c.State != Completed:
		p.set(OutcomeStoreFailed, http.StatusServiceUnavailable, errBadState)
		writeProblem(w, http.StatusServiceUnavailable, "The idempotency store gave an invalid answer; the request was not processed.", true)
	// A different request under the same key is refused before anything
	// else, in flight or not: the client has a bug that waiting won't fix.
	case !bytes.Equal(c.Fingerprint, fp):
		p.set(OutcomeMismatch, http.StatusUnprocessableEntity, nil)
		writeProblem(w, http.StatusUnprocessableEntity, "This "+m.opts.Header+" was used for a different request (method, path, query, content type or body).", false)
	case c.State == InFlight:
		p.set(OutcomeInFlight, http.StatusConflict, nil)
		writeProblem(w, http.StatusConflict, "A request with this "+m.opts.Header+" is being processed; retry later to get its result.", true)
	default:
		replay(w, c.Result, p)
	}
}

var errBadState = errors.New("idempotency: the store's Claim answered no valid State")

// readBody reads the request body for the fingerprint, up to MaxBodyBytes.
// A non-zero status says why it could not: 413 or 400. The buffer grows
// with what arrives, never to a declared Content-Length before the bytes
// do: a client that sends headers only costs no more than its headers.
func (m *Middleware) readBody(r *http.Request) ([]byte, int) {
	if r.ContentLength > m.opts.MaxBodyBytes {
		return nil, http.StatusRequestEntityTooLarge
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil, 0
	}
	limit := m.opts.MaxBodyBytes + 1 // a byte more, to see a body past it
	if limit < 0 {
		limit = math.MaxInt64 // MaxBodyBytes is MaxInt64
	}
	body, err := readGrowing(r.Body, r.ContentLength, limit)
	switch {
	case int64(len(body)) > m.opts.MaxBodyBytes, err != nil && isMaxBytes(err):
		return nil, http.StatusRequestEntityTooLarge
	case err != nil:
		return nil, http.StatusBadRequest
	}
	return body, 0
}

// isMaxBytes reports whether err is an http.MaxBytesReader's: a body past
// a limit set before the middleware. (Apart from readBody, so that the
// target of errors.As escapes only when there is an error.)
func isMaxBytes(err error) bool {
	var tooLarge *http.MaxBytesError
	return errors.As(err, &tooLarge)
}

// firstRead is the most that readGrowing holds before any byte arrives.
const firstRead = 512

// readGrowing reads r to its end, or to limit bytes, into a buffer that
// starts at firstRead bytes, or at the declared length (and a byte to see
// the end in) if that is smaller, which makes most bodies one allocation
// of the right size, and grows with what is read, as io.ReadAll does.
func readGrowing(r io.Reader, declared, limit int64) ([]byte, error) {
	n := int64(firstRead)
	if declared > 0 && declared < n {
		n = declared + 1
	}
	b := make([]byte, 0, min(n, limit))
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		k, err := r.Read(b[len(b):min(int64(cap(b)), limit)])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// replay sends a saved result.
func replay(w http.ResponseWriter, result []byte, p *report) {
	rec, err := decodeRecord(result)
	if err != nil {
		// The store handed back what no middleware saved: a store fault.
		p.set(OutcomeStoreFailed, http.StatusInternalServerError, err)
		writeProblem(w, http.StatusInternalServerError, "The saved result of this request is unreadable.", false)
		return
	}
	p.set(OutcomeReplayed, rec.status, nil)
	h := w.Header() // the names are canonical: set without Header.Set's canonicalization
	h[ReplayedHeader] = []string{"true"}
	if rec.omitted {
		h[BodyOmittedHeader] = []string{"true"}
	}
	send(w, rec.status, rec.header, rec.body, rec.trailer, true)
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
