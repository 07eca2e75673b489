package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockUntilGone is a handler that answers only once the client is gone.
func blockUntilGone(arrived chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	}
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	srv := newServer(t, blockUntilGone(arrived), status(200))
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.AttemptTimeout = time.Second
	c := srv.client(&retryhttp.Transport{Policy: p})
	var tr retry.Trace
	req := get(t, srv.URL).WithContext(retryhttp.WithTrace(context.Background(), &tr))

	done := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			assert.Equal(t, "status 200", readAll(t, resp.Body))
		}
		done <- err
	}()
	recv(t, arrived, "the request")
	clk.Add(time.Second) // the first attempt times out
	assert.Equal(t, 200*time.Millisecond, recv(t, clk.Waits(), "a wait"))
	clk.Add(200 * time.Millisecond)
	require.NoError(t, recv(t, done, "the response"))
	assert.Equal(t, []string{"attempt timed out", ""}, reasons(tr))
	assert.Equal(t, 2, srv.hits())
}

func TestAttemptTimeoutOfAKeylessPOSTIsNotRetried(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	srv := newServer(t, blockUntilGone(arrived), status(200))
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.AttemptTimeout = time.Second
	c := srv.client(&retryhttp.Transport{Policy: p})

	done := make(chan error, 1)
	go func() {
		_, err := c.Post(srv.URL, "text/plain", strings.NewReader("x"))
		done <- err
	}()
	recv(t, arrived, "the request")
	clk.Add(time.Second)
	err := recv(t, done, "the response")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var urlErr *url.Error
	require.ErrorAs(t, err, &urlErr)
	assert.True(t, urlErr.Timeout(), "url.Error sees the timeout through the Transport's marks")
	assert.True(t, os.IsTimeout(err))
	assert.False(t, retry.DefaultClassifier(context.Background(), retry.Attempt{Err: err}).Retry, "marked permanent for an outer retry loop")
	assert.Equal(t, 1, srv.hits())
}

// The body of the response returned to the caller outlives RoundTrip, the
// attempt's timer and the MaxElapsed deadline.
func TestFinalBodyIsReadableAfterTheAttemptTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(200)
		_ = http.NewResponseController(w).Flush() // headers now, body later
		<-release
		_, _ = io.WriteString(w, "late body")
	})
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.AttemptTimeout = time.Second
	p.MaxElapsed = 2 * time.Second
	c := srv.client(&retryhttp.Transport{Policy: p})

	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	clk.Add(time.Minute) // past every timer the request had
	close(release)
	assert.Equal(t, "late body", readAll(t, resp.Body))
}

func TestCallerCancelDuringAnAttemptIsNotRetried(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	srv := newServer(t, blockUntilGone(arrived), status(200))
	clk := retrytest.NewClock()
	c := srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)})
	ctx, cancel := context.WithCancelCause(context.Background())
	req := get(t, srv.URL).WithContext(ctx)

	done := make(chan error, 1)
	go func() {
		_, err := c.Do(req)
		done <- err
	}()
	recv(t, arrived, "the request")
	stop := errors.New("user left the page")
	cancel(stop)
	err := recv(t, done, "the response")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, stop)
	assert.Equal(t, 1, srv.hits())
}

// A Base that reports the end of its ctx in words of its own: the Transport
// still knows that its timer, not the caller, ended the attempt.
func TestAttemptTimeoutIsKnownWhateverBaseReturns(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(200))
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.AttemptTimeout = time.Second
	started := make(chan struct{}, 1)
	var calls int
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if calls++; calls == 1 {
			started <- struct{}{}
			<-req.Context().Done()
			return nil, errors.New("custom transport: aborted")
		}
		return srv.Client().Transport.RoundTrip(req)
	})
	var tr retry.Trace
	req := get(t, srv.URL).WithContext(retryhttp.WithTrace(context.Background(), &tr))
	done := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Transport: &retryhttp.Transport{Base: base, Policy: p}}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	recv(t, started, "the request")
	clk.Add(time.Second)
	clk.Add(recv(t, clk.Waits(), "a wait"))
	require.NoError(t, recv(t, done, "the response"))
	assert.Equal(t, []string{"attempt timed out", ""}, reasons(tr))
}
