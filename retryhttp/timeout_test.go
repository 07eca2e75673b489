package retryhttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
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

// An attempt that its own AttemptTimeout ended is a timeout, retried,
// whatever error Base made of the end of its ctx: context.Canceled, as
// retrytest.HandlerTransport and many transports return, the ctx's error
// wrapped, or an error of Base's own. On the plain path and the hedged one.
func TestAttemptTimeoutIsRetriedWhateverBaseMakesOfIt(t *testing.T) {
	t.Parallel()
	bases := map[string]func(h http.Handler) http.RoundTripper{
		"HandlerTransport": retrytest.HandlerTransport,
		"wrapped ctx.Err()": func(h http.Handler) http.RoundTripper {
			next := retrytest.HandlerTransport(h)
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				resp, err := next.RoundTrip(req)
				if err != nil {
					return nil, fmt.Errorf("custom transport: %w", req.Context().Err())
				}
				return resp, nil
			})
		},
		"Permanent(ctx.Err())": func(h http.Handler) http.RoundTripper {
			next := retrytest.HandlerTransport(h)
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				resp, err := next.RoundTrip(req)
				if err != nil {
					return nil, retry.Permanent(req.Context().Err())
				}
				return resp, nil
			})
		},
	}
	for name, base := range bases {
		for _, hedged := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/hedged=%v", name, hedged), func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) {
					var calls atomic.Int32
					h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if calls.Add(1) == 1 {
							<-r.Context().Done() // stalls until the attempt times out
							return
						}
						_, _ = io.WriteString(w, "ok")
					})
					tr := &retryhttp.Transport{
						Base:   base(h),
						Policy: retry.Policy{AttemptTimeout: 100 * time.Millisecond, BaseBackoff: time.Millisecond},
					}
					if hedged {
						tr.Hedger = &retry.Hedger{Delay: time.Hour} // hedged path, no hedge sent
					}
					var trace retry.Trace
					req := get(t, "http://svc.test/").WithContext(retryhttp.WithTrace(context.Background(), &trace))
					resp, err := tr.RoundTrip(req)
					require.NoError(t, err)
					assert.Equal(t, "ok", readAll(t, resp.Body))
					assert.Equal(t, []string{"attempt timed out", ""}, reasons(trace))
					first := attemptErrs(trace)[0]
					assert.ErrorIs(t, first, context.DeadlineExceeded, "attempt 1 is a timeout")
					assert.NotErrorIs(t, first, context.Canceled, "not a cancellation")
				})
			})
		}
	}
}

// The caller's own cancellation stays a cancellation, with AttemptTimeout
// set: it is not retried.
func TestCallerCancelWithAttemptTimeoutIsNotRetried(t *testing.T) {
	t.Parallel()
	for _, hedged := range []bool{false, true} {
		t.Run(fmt.Sprintf("hedged=%v", hedged), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				var calls atomic.Int32
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					calls.Add(1)
					cancel()
					<-r.Context().Done()
				})
				tr := &retryhttp.Transport{
					Base:   retrytest.HandlerTransport(h),
					Policy: retry.Policy{AttemptTimeout: 100 * time.Millisecond, BaseBackoff: time.Millisecond},
				}
				if hedged {
					tr.Hedger = &retry.Hedger{Delay: time.Hour}
				}
				_, err := tr.RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
				require.ErrorIs(t, err, context.Canceled)
				assert.Equal(t, int32(1), calls.Load())
			})
		})
	}
}

// attemptErrs returns each attempt's Err from tr.
func attemptErrs(tr retry.Trace) []error {
	var errs []error
	for a := range tr.All() {
		errs = append(errs, a.Err)
	}
	return errs
}

// Under an outer retry loop, the nested Transport hands an attempt timeout
// back as a timeout, which the outer loop retries, even from a Base that
// returns context.Canceled for it.
func TestAttemptTimeoutUnderAnOuterLoopIsRetried(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				<-r.Context().Done()
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
		client := &http.Client{Transport: &retryhttp.Transport{
			Base:   retrytest.HandlerTransport(h),
			Policy: retry.Policy{AttemptTimeout: 100 * time.Millisecond},
		}}
		var got string
		tr, err := retry.Do(context.Background(), func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			got = readAll(t, resp.Body)
			return nil
		}, retry.Policy{BaseBackoff: time.Millisecond})
		require.NoError(t, err)
		assert.Equal(t, "ok", got)
		assert.Equal(t, []string{"attempt timed out", ""}, reasons(tr))
	})
}
