package outbox_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

// HTTPOp keeps the method, URL, body and allowed headers, takes the
// caller's key, and never keeps a credential.
func TestHTTPOp(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodPost, "https://api.example/charges?x=1", strings.NewReader("amount=10"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("X-Request-Source", "checkout")
	r.Header.Set("X-Unlisted", "dropped")
	r.Header.Set("Authorization", "Bearer s3cret-token")
	r.Header.Set("Cookie", "session=s3cret-cookie")
	r.Header.Set("Idempotency-Key", "order-42")
	op, err := outbox.HTTPOp(r, "charge", "content-type", "X-Request-Source", "Idempotency-Key")
	require.NoError(t, err)
	assert.Equal(t, "order-42", op.Key)
	assert.Equal(t, "charge", op.Kind)
	p := string(op.Payload)
	for _, want := range []string{"POST", "https://api.example/charges?x=1", "application/x-www-form-urlencoded", "checkout"} {
		assert.Contains(t, p, want)
	}
	for _, never := range []string{"s3cret", "dropped"} {
		assert.NotContains(t, p, never)
	}

	for _, h := range []string{"Authorization", "cookie", "Proxy-Authorization", "X-API-Key"} {
		r := httptest.NewRequest(http.MethodPost, "https://api.example/", nil)
		_, err := outbox.HTTPOp(r, "charge", h)
		assert.ErrorIs(t, err, outbox.ErrInvalidOp, h)
	}
	_, err = outbox.HTTPOp(nil, "charge")
	assert.ErrorIs(t, err, outbox.ErrInvalidOp)

	// A URL's userinfo is a credential (Go sends it as Basic auth): never
	// written, and never quoted in the error either.
	for _, u := range []string{"https://alice:s3cret@api.example/charges", "https://alice@api.example/charges"} {
		op, err := outbox.HTTPOp(httptest.NewRequest(http.MethodPost, u, nil), "charge")
		require.ErrorIs(t, err, outbox.ErrInvalidOp, u)
		assert.NotContains(t, err.Error(), "s3cret")
		assert.NotContains(t, err.Error(), "alice")
		assert.Empty(t, op.Payload)
	}
}

// recorder is a server behind package idempotency that fails its first
// answers with the given statuses, then succeeds.
type recorder struct {
	mu       sync.Mutex
	statuses []int
	effects  int
	keys     []string
	auth     []string
}

func (s *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	if len(s.statuses) > 0 {
		st := s.statuses[0]
		s.statuses = s.statuses[1:]
		if st == http.StatusConflict || st == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(st)
		return
	}
	io.Copy(io.Discard, r.Body)
	s.effects++
	w.WriteHeader(http.StatusCreated)
}

func httpOutbox(t *testing.T, srv *httptest.Server, p retry.Policy) *outbox.Outbox {
	t.Helper()
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Policy: p, Clock: retrytest.NewAutoClock()})
	// A retryhttp.Transport that would retry 503s four times by itself: under
	// the Outbox it makes one attempt per Outbox attempt.
	client := &http.Client{Transport: &retryhttp.Transport{Base: srv.Client().Transport, Policy: retry.Policy{Clock: retrytest.NewAutoClock()}}}
	o.Handle("http", outbox.HTTPHandler(client, func(ctx context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer fresh")
		return nil
	}))
	run(t, o)
	return o
}

func enqueueHTTP(t *testing.T, o *outbox.Outbox, url string) string {
	t.Helper()
	op, err := outbox.HTTPOp(httptest.NewRequest(http.MethodPost, url, strings.NewReader("amount=10")), "http")
	require.NoError(t, err)
	key, err := o.Enqueue(context.Background(), op)
	require.NoError(t, err)
	return key
}

// The seam: an op sent by HTTPHandler through a retryhttp.Transport to a
// server behind the idempotency middleware. A 503 is retried by the
// Outbox, under the same key, with credentials added at send time, and
// the server has one effect.
func TestHTTPHandlerThroughMiddleware(t *testing.T) {
	t.Parallel()
	rec := &recorder{statuses: []int{http.StatusServiceUnavailable}}
	mw, err := idempotency.New(idempotency.Options{})
	require.NoError(t, err)
	srv := httptest.NewServer(mw.Handler(rec))
	defer srv.Close()
	o := httpOutbox(t, srv, retry.Policy{})
	key := enqueueHTTP(t, o, srv.URL)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Result{Key: key, State: outbox.Succeeded, Attempts: 2}, r)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, 1, rec.effects)
	assert.Equal(t, []string{key, key}, rec.keys, "one send per Outbox attempt, each under the op's key")
	assert.Equal(t, []string{"Bearer fresh", "Bearer fresh"}, rec.auth)
}

// A 409 with Retry-After (an earlier attempt still running) is a wait: it
// does not use up the attempts.
func TestHTTPHandlerConflictIsAWait(t *testing.T) {
	t.Parallel()
	rec := &recorder{statuses: []int{http.StatusConflict, http.StatusConflict}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	o := httpOutbox(t, srv, retry.Policy{MaxAttempts: 1})
	key := enqueueHTTP(t, o, srv.URL)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Result{Key: key, State: outbox.Succeeded, Attempts: 1}, r)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Len(t, rec.keys, 3)
	assert.Equal(t, 1, rec.effects)
}

// A status that is not worth retrying ends the op at once.
func TestHTTPHandlerClientErrorFails(t *testing.T) {
	t.Parallel()
	rec := &recorder{statuses: []int{http.StatusUnprocessableEntity}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	o := httpOutbox(t, srv, retry.Policy{})
	key := enqueueHTTP(t, o, srv.URL)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Failed, r.State)
	assert.Equal(t, 1, r.Attempts)
	var se *retryhttp.StatusError
	require.ErrorAs(t, r.Err, &se)
	assert.Equal(t, http.StatusUnprocessableEntity, se.StatusCode)
}
