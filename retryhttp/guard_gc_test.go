package retryhttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

// A Transport with a Logger watches the breakers it uses; one that the
// program drops stops watching, so that Transports made and dropped (one
// per tenant, per test) never fill a shared Breakers' watchers, and a
// watcher's hold does not keep a dropped Transport alive.
func TestDroppedTransportStopsWatching(t *testing.T) {
	bs, err := guard.NewBreakers(guard.BreakerOptions{}, 16)
	require.NoError(t, err)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	use := func() {
		tr := &retryhttp.Transport{
			Base:   retrytest.HandlerTransport(ok),
			Policy: retry.Policy{MaxAttempts: 1},
			Guards: guard.Keyed{Breakers: bs},
			Logger: logged(io.Discard),
		}
		resp, err := tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://api.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
	}
	for range 3 * guard.MaxWatchers {
		use()
	}
	// The cleanups of the dropped Transports run after a collection, on a
	// goroutine of the runtime: collect until one more watcher fits.
	var stop func()
	for i := 0; i < 100 && stop == nil; i++ {
		runtime.GC()
		stop, _ = bs.Watch(func(guard.Change) {})
	}
	require.NotNil(t, stop, "the dropped Transports still watch: no room for another watcher")
	stop()
}

// A Transport that cannot watch a guard, because it has all the watchers
// it may have, says so once rather than log nothing in silence.
func TestTransportSaysWhenItCannotWatch(t *testing.T) {
	t.Parallel()
	bs, err := guard.NewBreakers(guard.BreakerOptions{}, 16)
	require.NoError(t, err)
	for range guard.MaxWatchers {
		stop, err := bs.Watch(func(guard.Change) {})
		require.NoError(t, err)
		t.Cleanup(stop)
	}
	var buf syncBuffer
	tr := &retryhttp.Transport{
		Base:   retrytest.HandlerTransport(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})),
		Policy: retry.Policy{MaxAttempts: 1},
		Guards: guard.Keyed{Breakers: bs},
		Logger: logged(&buf),
	}
	for range 3 {
		resp, err := tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://api.example/", nil))
		require.NoError(t, err)
		resp.Body.Close()
	}
	assert.Equal(t, 1, strings.Count(buf.String(), "will not be logged"), buf.String())
	assert.Contains(t, buf.String(), "too many watchers")
}
