package retrytest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Inside synctest, a client whose Base is a HandlerTransport retries on the
// bubble's fake time: no socket, no deadlock, no real wait.
func TestHandlerTransportInsideSynctest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if calls.Add(1) < 3 {
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Length", "6")
			_, _ = io.WriteString(w, "ok "+string(body))
		})
		client := &http.Client{Transport: retrytest.HandlerTransport(h)}
		start := time.Now()
		var tr retry.Trace
		_, err := retry.Do(context.Background(), func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://svc.test/x", strings.NewReader("abc"))
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			if resp.StatusCode == http.StatusServiceUnavailable {
				return retry.RetryAfter(errors.New("503"), 2*time.Second)
			}
			assert.Equal(t, "ok abc", string(b))
			assert.Equal(t, int64(6), resp.ContentLength)
			return nil
		}, retry.Policy{Jitter: retry.NoJitter, OnDone: func(_ context.Context, t retry.Trace, _ error) { tr = t }})
		require.NoError(t, err)
		assert.Equal(t, int32(3), calls.Load())
		assert.Equal(t, 2*time.Second+200*time.Millisecond+2*time.Second+400*time.Millisecond, time.Since(start), "fake time: the waits and nothing else")
		assert.Equal(t, 3, tr.Attempts())
	})
}

// The handler sees the caller give up: a canceled request ends the
// handler's ctx, and a handler that never answers does not hold the caller.
func TestHandlerTransportEndsWithTheCaller(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		handlerDone := make(chan error, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			handlerDone <- r.Context().Err()
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
		require.NoError(t, err)
		_, err = retrytest.HandlerTransport(h).RoundTrip(req)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, <-handlerDone, context.DeadlineExceeded)
	})
}

// Closing the body early stops a handler that streams: its writes fail.
func TestHandlerTransportBodyCloseStopsTheHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		writeErr := make(chan error, 1)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for {
				if _, err := io.WriteString(w, "chunk"); err != nil {
					writeErr <- err
					return
				}
			}
		})
		req, err := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
		require.NoError(t, err)
		resp, err := retrytest.HandlerTransport(h).RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, int64(-1), resp.ContentLength)
		buf := make([]byte, 5)
		_, err = io.ReadFull(resp.Body, buf)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Error(t, <-writeErr)
	})
}

// A panic in the handler reaches the caller as an error.
func TestHandlerTransportReportsAPanic(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	req, err := http.NewRequest(http.MethodGet, "http://svc.test/", nil)
	require.NoError(t, err)
	_, err = retrytest.HandlerTransport(h).RoundTrip(req)
	assert.ErrorContains(t, err, "panicked")
}
