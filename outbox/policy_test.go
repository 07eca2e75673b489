package outbox_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

func liveConfig(t *testing.T, doc string) *retryconfig.Live {
	t.Helper()
	cfg, err := retryconfig.Parse([]byte(doc))
	require.NoError(t, err)
	return retryconfig.NewLive(cfg)
}

// Options.Policies is read at each attempt: a reload reaches an op that is
// already pending, without a new Outbox.
func TestPoliciesAreReadAtEachAttempt(t *testing.T) {
	t.Parallel()
	live := liveConfig(t, `{"policies": {"pay": {"maxAttempts": 2, "baseBackoff": "10ms"}}}`)
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: retrytest.NewAutoClock(), Policies: live})
	var calls atomic.Int32
	o.Handle("pay", func(context.Context, outbox.Op) error {
		if calls.Add(1) == 1 {
			// During the first attempt, an operator raises the limit.
			require.NoError(t, live.Update([]byte(`{"policies": {"pay": {"maxAttempts": 4, "baseBackoff": "10ms"}}}`)))
		}
		return errors.New("503")
	})
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	run(t, o)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Failed, r.State)
	assert.Equal(t, "attempts used up", r.Reason)
	assert.Equal(t, 4, r.Attempts, "the reloaded MaxAttempts")
}

// HTTPHandler's statuses follow the policy: the kind's
// retryableStatusCodes in Options.Policies replace retryhttp's list (a 500
// is retried, a 503 is not), and the Reason names the status, with no
// "retry after" for an answer that had none.
func TestHTTPHandlerStatusesFollowThePolicy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		statuses []int
		state    outbox.State
		attempts int
		reason   string
	}{
		{"listed 500 is retried", []int{500}, outbox.Succeeded, 2, ""},
		{"unlisted 503 ends the op", []int{503}, outbox.Failed, 1, "503 Service Unavailable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if i := int(n.Add(1)) - 1; i < len(c.statuses) {
					w.WriteHeader(c.statuses[i])
					return
				}
				w.WriteHeader(http.StatusCreated)
			}))
			t.Cleanup(srv.Close)
			clk := retrytest.NewAutoClock()
			live := liveConfig(t, `{"policies": {"http": {"maxAttempts": 3, "baseBackoff": "10ms", "retryableStatusCodes": [500]}}}`)
			o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: clk, Policies: live})
			client := &http.Client{Transport: &retryhttp.Transport{Base: srv.Client().Transport, Policy: retry.Policy{Clock: clk}}}
			o.Handle("http", outbox.HTTPHandler(client, nil))
			key := enqueueHTTP(t, o, srv.URL)
			run(t, o)
			r := wait(t, o, key)
			assert.Equal(t, c.state, r.State)
			assert.Equal(t, c.attempts, r.Attempts)
			assert.Equal(t, c.reason, r.Reason)
		})
	}
}

// A 503 with no Retry-After is retried after the backoff alone, and its
// Reason says "503 Service Unavailable", not "retry after"; one with a
// Retry-After waits at least that long.
func TestHTTPHandlerRetryAfterOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	clk := retrytest.NewAutoClock()
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: clk,
		Policy: retry.Policy{MaxAttempts: 3, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}})
	client := &http.Client{Transport: &retryhttp.Transport{Base: srv.Client().Transport, Policy: retry.Policy{Clock: clk}}}
	o.Handle("http", outbox.HTTPHandler(client, nil))
	key := enqueueHTTP(t, o, srv.URL)
	run(t, o)
	assert.Equal(t, outbox.Failed, wait(t, o, key).State)
	dead, err := o.DeadLetters(context.Background())
	require.NoError(t, err)
	require.Len(t, dead, 1)
	tr := dead[0].Trace
	require.Equal(t, 3, tr.Attempts())
	for a := range tr.All() {
		assert.Equal(t, "503 Service Unavailable", a.Reason, "attempt %d", a.Number)
	}
	waits := tr.Waits()
	require.Len(t, waits, 2)
	assert.Less(t, waits[0], time.Second, "no Retry-After: the backoff alone")
	assert.GreaterOrEqual(t, waits[1], 30*time.Second, "the Retry-After asked for")
	assert.Less(t, waits[1], 31*time.Second)
	// The jitter's own part is what feeds the next one: a long
	// Retry-After does not grow it.
	assert.LessOrEqual(t, dead[0].LastWait, 20*time.Millisecond, "LastWait is the jittered backoff alone")
}
