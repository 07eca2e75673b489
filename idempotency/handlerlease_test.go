package idempotency_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callLog is a Store that records the calls the middleware makes to it.
type callLog struct {
	idempotency.Store

	mu       sync.Mutex
	claims   []string // key + " " + token of each Claim
	complete int
	release  int
}

func (l *callLog) Claim(ctx context.Context, key, token string, fp []byte, lease time.Duration) (idempotency.Claim, error) {
	l.mu.Lock()
	l.claims = append(l.claims, key+" "+token)
	l.mu.Unlock()
	return l.Store.Claim(ctx, key, token, fp, lease)
}

func (l *callLog) Complete(ctx context.Context, key, token string, fp, result []byte, ttl time.Duration) error {
	l.mu.Lock()
	l.complete++
	l.mu.Unlock()
	return l.Store.Complete(ctx, key, token, fp, result, ttl)
}

func (l *callLog) Release(ctx context.Context, key, token string) error {
	l.mu.Lock()
	l.release++
	l.mu.Unlock()
	return l.Store.Release(ctx, key, token)
}

func (l *callLog) counts() (completes, releases int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.complete, l.release
}

// txHandler is a handler that saves its own response, as a handler that
// commits it with its effects does: the MemoryStore's Complete, called by
// the handler itself, stands for its transaction's commit. write is the
// response it then writes; nil writes the one it saved.
type txHandler struct {
	store *idempotency.MemoryStore
	write func(w http.ResponseWriter)

	mu    sync.Mutex
	lease idempotency.Lease
	ok    bool
	err   error // of Result or of the "commit"
}

func (h *txHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lease, ok := idempotency.FromContext(r.Context())
	h.mu.Lock()
	h.lease, h.ok = lease, ok
	h.mu.Unlock()
	header := http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"session=secret"}}
	body := []byte(`{"id":7}`)
	var err error
	if ok {
		var result []byte
		if result, err = lease.Result(http.StatusCreated, header, body); err == nil {
			err = h.store.Complete(r.Context(), lease.Key, lease.Token, nil, result, lease.TTL)
		}
	}
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
	if h.write != nil {
		h.write(w)
		return
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

func (h *txHandler) seen() (idempotency.Lease, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease, h.ok, h.err
}

func newTxHandler(t *testing.T) (*txHandler, *callLog) {
	t.Helper()
	mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{})
	require.NoError(t, err)
	return &txHandler{store: mem}, &callLog{Store: mem}
}

func TestFromContextGivesTheHandlerItsLease(t *testing.T) {
	t.Parallel()
	h, log := newTxHandler(t)
	h.write = func(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) }
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: log, TTL: time.Hour}), h)

	do(t, srv, req{key: "k"})
	lease, ok, _ := h.seen()
	require.True(t, ok, "a handler run for a claimed key has a lease")
	require.Len(t, log.claims, 1)
	assert.Equal(t, log.claims[0], lease.Key+" "+lease.Token, "the key and token the store was asked to claim")
	assert.Equal(t, time.Hour, lease.TTL)

	do(t, srv, req{key: ""})
	_, ok, _ = h.seen()
	assert.False(t, ok, "a request without a key has no lease")
	_, ok = idempotency.FromContext(context.Background())
	assert.False(t, ok)
}

func TestResponseSavedByTheHandlerIsSentWithoutAComplete(t *testing.T) {
	t.Parallel()
	h, log := newTxHandler(t)
	var sums []idempotency.Summary
	var mu sync.Mutex
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: log, OnDone: func(_ *http.Request, s idempotency.Summary) {
		mu.Lock()
		sums = append(sums, s)
		mu.Unlock()
	}}), h)

	first := do(t, srv, req{key: "k"})
	_, _, err := h.seen()
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, first.status)
	assert.Equal(t, `{"id":7}`, first.body)
	assert.Equal(t, "session=secret", first.header.Get("Set-Cookie"), "the first response is the handler's")
	completes, releases := log.counts()
	assert.Zero(t, completes, "the middleware saved nothing again")
	assert.Zero(t, releases)

	again := do(t, srv, req{key: "k"})
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, first.status, again.status)
	assert.Equal(t, first.body, again.body)
	assert.Equal(t, "application/json", again.header.Get("Content-Type"))
	assert.Empty(t, again.header.Get("Set-Cookie"), "Result leaves out what the middleware never saves")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, sums, 2)
	assert.Equal(t, idempotency.OutcomeExecuted, sums[0].Outcome)
	assert.Equal(t, 1, sums[0].StoreCalls, "the claim only")
}

func TestHandlerThatWritesAnotherResponseIsCompletedAsUsual(t *testing.T) {
	t.Parallel()
	h, log := newTxHandler(t)
	h.write = func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte("another"))
	}
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: log}), h)

	first := do(t, srv, req{key: "k"})
	assert.Equal(t, http.StatusConflict, first.status)
	completes, _ := log.counts()
	assert.Equal(t, 1, completes, "the middleware completes the key itself")
	again := do(t, srv, req{key: "k"})
	assert.Equal(t, http.StatusCreated, again.status, "a Complete with the same token keeps what was saved first")
}

func TestHandlerThatSavedThenAnswersRetryableReleases(t *testing.T) {
	t.Parallel()
	h, log := newTxHandler(t)
	h.write = func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: log}), h)

	assert.Equal(t, http.StatusServiceUnavailable, do(t, srv, req{key: "k"}).status)
	_, releases := log.counts()
	assert.Equal(t, 1, releases, "a retryable status releases the key, as without Result")
	again := do(t, srv, req{key: "k"})
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader),
		"the release failed (the key is completed): what committed is replayed")
	assert.Equal(t, http.StatusCreated, again.status)
}

func TestLeaseResultRefusesWhatIsNeverSaved(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	errs := map[string]error{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lease, _ := idempotency.FromContext(r.Context())
		try := func(name string, status int, body string) {
			_, err := lease.Result(status, nil, []byte(body))
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		}
		try("1xx", http.StatusContinue, "")
		try("above 999", 1000, "")
		try("retryable", http.StatusServiceUnavailable, "")
		try("204 with a body", http.StatusNoContent, "x")
		try("204", http.StatusNoContent, "")
		try("400", http.StatusBadRequest, "bad")
		w.WriteHeader(http.StatusNoContent)
	})
	srv := serve(t, newMiddleware(t, idempotency.Options{}), h)
	do(t, srv, req{key: "k"})

	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"1xx", "above 999", "retryable", "204 with a body"} {
		assert.Error(t, errs[name], name)
	}
	assert.ErrorIs(t, errs["204 with a body"], http.ErrBodyNotAllowed)
	assert.NoError(t, errs["204"])
	assert.NoError(t, errs["400"], "a 4xx is saved, as the middleware saves it")
	_, err := idempotency.Lease{Key: "k", Token: "t"}.Result(http.StatusOK, nil, nil)
	assert.Error(t, err, "a Lease not from FromContext")
}

func TestLeaseResultLeavesOutABodyPastMaxResponseBytes(t *testing.T) {
	t.Parallel()
	h, log := newTxHandler(t)
	big := strings.Repeat("x", 64)
	h.write = nil
	mw := newMiddleware(t, idempotency.Options{Store: log, MaxResponseBytes: 16})
	srv := serve(t, mw, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lease, _ := idempotency.FromContext(r.Context())
		header := http.Header{"Content-Length": {"64"}, "X-Order": {"7"}}
		result, err := lease.Result(http.StatusCreated, header, []byte(big))
		if err == nil {
			err = h.store.Complete(r.Context(), lease.Key, lease.Token, nil, result, lease.TTL)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("X-Order", "7")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(big))
	}))

	first := do(t, srv, req{key: "k"})
	assert.Equal(t, big, first.body, "the first response is streamed in full")
	again := do(t, srv, req{key: "k"})
	assert.Equal(t, http.StatusCreated, again.status)
	assert.Equal(t, "true", again.header.Get(idempotency.BodyOmittedHeader))
	assert.Equal(t, "7", again.header.Get("X-Order"))
	assert.Empty(t, again.body)
}
