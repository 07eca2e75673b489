package idempotency_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
)

// The middleware's own allocations per request, beyond the handler's, on
// the path every keyed request takes with a MemoryStore: the fingerprint,
// the store key and token, the claim, the handler's ctx and request, the
// recorder and the saved record for a fresh key; the decoded record for a
// replay. No timer is among them: a request that ends before its first
// deadline sets none (a timer per request costs two allocations more, and
// a wake-up of the network poller on a real server).
func TestAllocationsPerRequest(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates too")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":1,"item":"book","quantity":1}`)
	})
	m := newMiddleware(t, idempotency.Options{})
	wrapped := m.Handler(h)
	var n int
	allocs := func(h http.Handler, key func() string) float64 {
		return testing.AllocsPerRun(200, func() {
			r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"item":"book","quantity":1}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Idempotency-Key", key())
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				t.Fatalf("status %d", w.Code)
			}
		})
	}
	bare := allocs(h, func() string { return "k" })
	fresh := allocs(wrapped, func() string { n++; return "fresh-" + strconv.Itoa(n) })
	replay := allocs(wrapped, func() string { return "fresh-1" })
	t.Logf("allocations: bare handler %v, fresh key %v (+%v), replay %v (+%v)", bare, fresh, fresh-bare, replay, replay-bare)
	// The fresh key's count includes the key's own string (strconv), and
	// the replay's the Idempotent-Replayed header.
	assert.LessOrEqual(t, fresh-bare, 21.0, "a fresh key's allocations beyond the handler's")
	assert.LessOrEqual(t, replay-bare, 8.0, "a replay's allocations beyond the handler's")
}
