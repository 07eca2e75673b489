package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWhichResponsesAreSaved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		saved  bool
	}{
		{http.StatusOK, true},
		{http.StatusCreated, true},
		{http.StatusNoContent, true},
		{http.StatusFound, true},
		{http.StatusBadRequest, true},
		{http.StatusNotFound, true},
		{http.StatusConflict, true},
		{http.StatusUnprocessableEntity, true},
		{http.StatusRequestTimeout, false},
		{http.StatusTooManyRequests, false},
		{http.StatusInternalServerError, false},
		{http.StatusBadGateway, false},
		{http.StatusServiceUnavailable, false},
		{http.StatusGatewayTimeout, false},
		{599, false},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			t.Parallel()
			srv := serve(t, newMiddleware(t, idempotency.Options{}), statusHandler(tc.status))
			first := do(t, srv, req{key: "k"})
			require.Equal(t, tc.status, first.status)
			again := do(t, srv, req{key: "k"})
			require.Equal(t, tc.status, again.status)
			if tc.saved {
				assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
				assert.Equal(t, first.body, again.body)
			} else {
				assert.Empty(t, again.header.Get(idempotency.ReplayedHeader), "the key was released: the handler ran again")
				assert.NotEqual(t, first.body, again.body)
			}
		})
	}
}

// statusHandler answers status with a body that differs on each run.
func statusHandler(status int) http.Handler {
	var runs atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := runs.Add(1)
		w.WriteHeader(status)
		if status != http.StatusNoContent {
			fmt.Fprintf(w, "run %d", n)
		}
	})
}

func TestRetryableIsConfigurable(t *testing.T) {
	t.Parallel()
	// This service answers 500 only after rolling back, and 409 for a
	// conflict that a retry may fix: it says so.
	m := newMiddleware(t, idempotency.Options{Retryable: func(status int) bool {
		return status == http.StatusConflict
	}})
	srv500 := serve(t, m, statusHandler(http.StatusInternalServerError))
	do(t, srv500, req{key: "a"})
	assert.Equal(t, "true", do(t, srv500, req{key: "a"}).header.Get(idempotency.ReplayedHeader), "500 saved")

	srv409 := serve(t, m, statusHandler(http.StatusConflict))
	do(t, srv409, req{key: "b"})
	assert.Empty(t, do(t, srv409, req{key: "b"}).header.Get(idempotency.ReplayedHeader), "409 released")
}

func TestHandlerThatWritesNothingIsSavedAs200(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	srv := serve(t, newMiddleware(t, idempotency.Options{}), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		runs.Add(1)
		w.Header().Set("X-Done", "yes")
	}))
	first := do(t, srv, req{key: "k"})
	again := do(t, srv, req{key: "k"})
	for _, rp := range []reply{first, again} {
		assert.Equal(t, http.StatusOK, rp.status)
		assert.Equal(t, "yes", rp.header.Get("X-Done"))
		assert.Empty(t, rp.body)
	}
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, int32(1), runs.Load())
}

func TestHeaderChangesAfterWriteHeaderAreNotSaved(t *testing.T) {
	t.Parallel()
	srv := serve(t, newMiddleware(t, idempotency.Options{}), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Before", "1")
		w.WriteHeader(http.StatusAccepted)
		w.Header().Set("X-After", "1") // net/http does not send it either
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprint(w, "body")
	}))
	for range 2 {
		rp := do(t, srv, req{key: "k"})
		assert.Equal(t, http.StatusAccepted, rp.status)
		assert.Equal(t, "1", rp.header.Get("X-Before"))
		assert.Empty(t, rp.header.Get("X-After"))
		assert.Equal(t, "body", rp.body)
	}
}

func TestResponseTooLargeToSave(t *testing.T) {
	t.Parallel()
	const limit = 1000
	big := strings.Repeat("0123456789", 500) // 5,000 bytes, written in pieces
	handler := func(status int, runs *atomic.Int32) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			runs.Add(1)
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("X-Order", "42")
			w.WriteHeader(status)
			for i := 0; i < len(big); i += 700 {
				_, err := w.Write([]byte(big[i:min(i+700, len(big))]))
				if err != nil {
					panic(err)
				}
			}
		})
	}
	t.Run("saved without its body", func(t *testing.T) {
		t.Parallel()
		var runs atomic.Int32
		srv := serve(t, newMiddleware(t, idempotency.Options{MaxResponseBytes: limit}), handler(http.StatusCreated, &runs))
		first := do(t, srv, req{key: "k"})
		assert.Equal(t, http.StatusCreated, first.status)
		assert.Equal(t, big, first.body, "the first client gets the whole body")
		assert.Empty(t, first.header.Get(idempotency.BodyOmittedHeader))

		again := do(t, srv, req{key: "k"})
		assert.Equal(t, http.StatusCreated, again.status, "the replay has the original status")
		assert.Equal(t, "42", again.header.Get("X-Order"), "and headers")
		assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
		assert.Equal(t, "true", again.header.Get(idempotency.BodyOmittedHeader))
		assert.Empty(t, again.body)
		assert.Equal(t, int32(1), runs.Load(), "the handler did not run twice")
	})
	t.Run("a retryable status is released", func(t *testing.T) {
		t.Parallel()
		var runs atomic.Int32
		srv := serve(t, newMiddleware(t, idempotency.Options{MaxResponseBytes: limit}), handler(http.StatusServiceUnavailable, &runs))
		for range 2 {
			rp := do(t, srv, req{key: "k"})
			assert.Equal(t, http.StatusServiceUnavailable, rp.status)
			assert.Equal(t, big, rp.body)
		}
		assert.Equal(t, int32(2), runs.Load())
	})
	t.Run("at the limit is saved whole", func(t *testing.T) {
		t.Parallel()
		var runs atomic.Int32
		srv := serve(t, newMiddleware(t, idempotency.Options{MaxResponseBytes: int64(len(big))}), handler(http.StatusCreated, &runs))
		do(t, srv, req{key: "k"})
		again := do(t, srv, req{key: "k"})
		assert.Equal(t, big, again.body)
		assert.Empty(t, again.header.Get(idempotency.BodyOmittedHeader))
	})
}

func TestHandlerPanicReleasesTheKey(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	m := newMiddleware(t, idempotency.Options{})
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if runs.Add(1) == 1 {
			panic("boom")
		}
		w.WriteHeader(http.StatusCreated)
	}))
	serveOnce := func() (code int, panicked any) {
		defer func() { panicked = recover() }()
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/orders", nil)
		r.Header.Set("Idempotency-Key", "k")
		h.ServeHTTP(rec, r)
		return rec.Code, nil
	}
	_, p := serveOnce()
	assert.Equal(t, "boom", p, "the panic goes on to net/http")
	code, p := serveOnce()
	assert.Nil(t, p)
	assert.Equal(t, http.StatusCreated, code, "the retry ran the handler: the panic did not keep the key")
	assert.Equal(t, int32(2), runs.Load())
}

// failing is a Store whose methods fail as told.
type failing struct {
	idempotency.Store
	claim, complete error
}

func (f *failing) Claim(ctx context.Context, key, token string, fp []byte, lease time.Duration) (idempotency.Claim, error) {
	if f.claim != nil {
		return idempotency.Claim{}, f.claim
	}
	return f.Store.Claim(ctx, key, token, fp, lease)
}

func (f *failing) Complete(ctx context.Context, key, token string, fp, result []byte, ttl time.Duration) error {
	if f.complete != nil {
		return f.complete
	}
	return f.Store.Complete(ctx, key, token, fp, result, ttl)
}

// hung is a Store whose Claim waits until its ctx ends.
type hung struct{ idempotency.Store }

func (hung) Claim(ctx context.Context, _, _ string, _ []byte, _ time.Duration) (idempotency.Claim, error) {
	<-ctx.Done()
	return idempotency.Claim{}, ctx.Err()
}

func TestStoreFailureIs503AndTheHandlerDoesNotRun(t *testing.T) {
	t.Parallel()
	mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		store idempotency.Store
	}{
		{"down", &failing{Store: mem, claim: errors.New("dial tcp: connection refused")}},
		{"timeout", hung{mem}},
		{"nonsense answer", stateStore(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := newOrders()
			srv := serve(t, newMiddleware(t, idempotency.Options{Store: tc.store, StoreTimeout: time.Millisecond}), o)
			requireProblem(t, do(t, srv, req{key: "k"}), http.StatusServiceUnavailable, true)
			assert.Zero(t, o.total())
		})
	}
}

// stateStore answers every Claim with its own value as the State.
type stateStore idempotency.State

func (s stateStore) Claim(context.Context, string, string, []byte, time.Duration) (idempotency.Claim, error) {
	return idempotency.Claim{State: idempotency.State(s)}, nil
}
func (stateStore) Renew(context.Context, string, string, time.Duration) error { return nil }
func (stateStore) Complete(context.Context, string, string, []byte, []byte, time.Duration) error {
	return nil
}
func (stateStore) Release(context.Context, string, string) error { return nil }

func TestResponseIsSentWhenItCannotBeSaved(t *testing.T) {
	t.Parallel()
	mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{})
	require.NoError(t, err)
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: &failing{Store: mem, complete: errors.New("write failed")}}), o)
	// The handler's work is done: its client gets the answer rather than a
	// reason to run it again.
	rp := do(t, srv, req{key: "k", body: "{}"})
	assert.Equal(t, http.StatusCreated, rp.status)
	assert.Contains(t, rp.body, `"id":1`)
	// The key stays claimed until its lease runs out.
	requireProblem(t, do(t, srv, req{key: "k", body: "{}"}), http.StatusConflict, true)
}

func TestUnreadableResultIs500(t *testing.T) {
	t.Parallel()
	o := newOrders()
	store := resultStore{[]byte("not a record")}
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: store}), o)
	requireProblem(t, do(t, srv, req{key: "k"}), http.StatusInternalServerError, false)
	assert.Zero(t, o.total())
}

// resultStore answers every Claim with a completed result.
type resultStore struct{ result []byte }

func (s resultStore) Claim(_ context.Context, _, _ string, fp []byte, _ time.Duration) (idempotency.Claim, error) {
	return idempotency.Claim{State: idempotency.Completed, Fingerprint: fp, Result: s.result}, nil
}
func (resultStore) Renew(context.Context, string, string, time.Duration) error { return nil }
func (resultStore) Complete(context.Context, string, string, []byte, []byte, time.Duration) error {
	return nil
}
func (resultStore) Release(context.Context, string, string) error { return nil }
