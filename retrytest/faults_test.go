package retrytest_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// script returns a fault func that gives faults in order, then Deliver,
// and counts the requests it saw.
func script(seen *atomic.Int32, faults ...retrytest.Fault) func(*http.Request) retrytest.Fault {
	return func(*http.Request) retrytest.Fault {
		if i := int(seen.Add(1)) - 1; i < len(faults) {
			return faults[i]
		}
		return retrytest.Deliver
	}
}

// bodySpy is a request body that records its Close.
type bodySpy struct {
	io.Reader
	closed atomic.Bool
}

func (b *bodySpy) Close() error { b.closed.Store(true); return nil }

func TestFaultRefuseNeverRunsTheHandler(t *testing.T) {
	t.Parallel()
	var runs, seen atomic.Int32
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { runs.Add(1) })
	body := &bodySpy{Reader: strings.NewReader("x")}
	req, err := http.NewRequest(http.MethodPost, "http://svc.test/", body)
	require.NoError(t, err)
	_, err = retrytest.FaultyHandlerTransport(h, script(&seen, retrytest.Refuse)).RoundTrip(req)

	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	assert.Equal(t, "dial", op.Op, "a refused dial: nothing reached the server")
	assert.Equal(t, int32(0), runs.Load())
	assert.True(t, body.closed.Load(), "the request body is closed")
}

func TestFaultDropAnswerRunsTheHandlerAndLosesItsAnswer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var runs, seen atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			time.Sleep(time.Second) // fake time: the work takes a while
			w.Header().Set("Location", "/orders/1")
			w.WriteHeader(http.StatusCreated)
			for range 1000 { // more than any pipe would hold: it must not block
				_, _ = w.Write([]byte(strings.Repeat("x", 1024)))
			}
			assert.Equal(t, "order", string(b))
			runs.Add(1)
		})
		body := &bodySpy{Reader: strings.NewReader("order")}
		req, err := http.NewRequest(http.MethodPost, "http://svc.test/", body)
		require.NoError(t, err)
		start := time.Now()
		_, err = retrytest.FaultyHandlerTransport(h, script(&seen, retrytest.DropAnswer)).RoundTrip(req)

		require.ErrorIs(t, err, io.EOF, "a dropped connection")
		assert.Equal(t, int32(1), runs.Load(), "the handler ran to its end first")
		assert.Equal(t, time.Second, time.Since(start))
		assert.True(t, body.closed.Load())
	})
}

// A caller that gives up while the handler of a dropped answer runs gets
// its ctx's error at once; the handler goes on to its end.
func TestFaultDropAnswerCallerGivesUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release, finished := make(chan struct{}), make(chan struct{})
		h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			<-release
			close(finished)
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://svc.test/", nil)
		require.NoError(t, err)
		var seen atomic.Int32
		_, err = retrytest.FaultyHandlerTransport(h, script(&seen, retrytest.DropAnswer)).RoundTrip(req)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		close(release)
		<-finished
	})
}

func TestFaultyHandlerTransportDeliversByDefault(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	for name, fault := range map[string]func(*http.Request) retrytest.Fault{
		"nil":     nil,
		"Deliver": func(*http.Request) retrytest.Fault { return retrytest.Deliver },
	} {
		req, err := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
		require.NoError(t, err)
		resp, err := retrytest.FaultyHandlerTransport(h, fault).RoundTrip(req)
		require.NoError(t, err, name)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, "ok", string(b), name)
	}
}

// The test the faults are for: exactly once, without sockets, on fake time.
// A keyed POST is refused, then handled with its answer lost, then
// retried: behind the idempotency middleware the order is made once and
// the client gets it replayed; without it, twice.
func TestFaultsProveExactlyOnceInsideSynctest(t *testing.T) {
	t.Parallel()
	for _, withMiddleware := range []bool{true, false} {
		t.Run(fmt.Sprintf("middleware=%v", withMiddleware), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var orders, seen atomic.Int32
				var svc http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.ReadAll(r.Body)
					w.WriteHeader(http.StatusCreated)
					fmt.Fprintf(w, "order %d", orders.Add(1))
				})
				if withMiddleware {
					m, err := idempotency.New(idempotency.Options{})
					require.NoError(t, err)
					svc = m.Handler(svc)
				}
				client := &http.Client{Transport: &retryhttp.Transport{
					Base:               retrytest.FaultyHandlerTransport(svc, script(&seen, retrytest.Refuse, retrytest.DropAnswer)),
					Policy:             retry.Policy{Jitter: retry.NoJitter},
					AutoIdempotencyKey: true,
				}}
				start := time.Now()
				resp, err := client.Post("http://svc.test/orders", "application/json", strings.NewReader(`{"item":1}`))
				require.NoError(t, err)
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())

				assert.Equal(t, int32(3), seen.Load(), "refused, dropped, delivered")
				assert.Equal(t, 200*time.Millisecond+400*time.Millisecond, time.Since(start), "the waits, on fake time")
				assert.Equal(t, http.StatusCreated, resp.StatusCode)
				if withMiddleware {
					assert.Equal(t, int32(1), orders.Load(), "the lost answer was replayed, not run again")
					assert.Equal(t, "order 1", string(b))
					assert.Equal(t, "true", resp.Header.Get(idempotency.ReplayedHeader))
				} else {
					assert.Equal(t, int32(2), orders.Load(), "without the middleware the retry runs the handler again")
					assert.Equal(t, "order 2", string(b))
				}
			})
		})
	}
}
