package retryhttp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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

var errBusy = errors.New("server busy")

// busyCheck fails a response whose body says it is busy.
func busyCheck(_ *http.Response, head []byte) error {
	if bytes.Contains(head, []byte(`"status":"busy"`)) {
		return errBusy
	}
	return nil
}

// body answers 200 with s, with a Content-Length.
func body(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, s) }
}

// A 200 that CheckResponse fails is retried, its body drained so that the
// connection serves the retry; the response that passes is returned whole.
func TestCheckResponseRetriesA200(t *testing.T) {
	t.Parallel()
	srv := newServer(t, body(`{"status":"busy"}`), body(`{"status":"ok"}`))
	clk := retrytest.NewClock()
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), CheckResponse: busyCheck}), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, `{"status":"ok"}`, readAll(t, r.resp.Body))
	assert.Equal(t, []string{"200 OK, CheckResponse failed", ""}, reasons(r.trace))
	var se *retryhttp.StatusError
	require.ErrorAs(t, attemptErrs(r.trace)[0], &se)
	assert.Equal(t, 200, se.StatusCode)
	assert.ErrorIs(t, se, errBusy)
	assert.Equal(t, int32(1), srv.conns.Load(), "the failed 200 was drained")
}

// When retries run out, the caller gets the last response with its body
// readable from the first byte, however much of it the check peeked at.
func TestCheckResponseLeavesTheReturnedBodyWhole(t *testing.T) {
	t.Parallel()
	long := `{"status":"busy","pad":"` + strings.Repeat("x", 10<<10) + `"}`
	srv := newServer(t, body(long))
	var heads []int
	check := func(resp *http.Response, head []byte) error {
		heads = append(heads, len(head))
		return busyCheck(resp, head)
	}
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.MaxAttempts = 2
	r := do(t, srv.client(&retryhttp.Transport{Policy: p, CheckResponse: check}), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.resp.StatusCode)
	assert.Equal(t, long, readAll(t, r.resp.Body))
	assert.Equal(t, []int{4 << 10, 4 << 10}, heads, "the peek stops at 4 KiB")
	assert.Equal(t, retry.StopExhausted, r.trace.Stop())
}

// An error marked retry.Permanent ends the request, even on a status that
// would be retried; nil leaves a status to its usual rule.
func TestCheckResponseCanMakeAStatusFinal(t *testing.T) {
	t.Parallel()
	suspended := func(_ *http.Response, head []byte) error {
		if bytes.Contains(head, []byte("suspended")) {
			return retry.Permanent(errors.New("account suspended"))
		}
		return nil
	}
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "account suspended", http.StatusServiceUnavailable)
	})
	clk := retrytest.NewClock()
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), CheckResponse: suspended}), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, 503, r.resp.StatusCode)
	assert.Equal(t, "account suspended\n", readAll(t, r.resp.Body))
	assert.Equal(t, []string{"503 Service Unavailable, CheckResponse failed"}, reasons(r.trace))

	srv = newServer(t, status(503), status(200))
	r = do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), CheckResponse: suspended}), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, []string{"503 Service Unavailable", ""}, reasons(r.trace))
}

// The peek waits at most 100ms for a slow body; the check sees what came
// by then, and the caller's reads get what has come as soon as it has,
// then the rest, not held back until 4 KiB have come.
func TestCheckResponsePeekIsBoundedInTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "first")
			w.(http.Flusher).Flush()
			time.Sleep(time.Second)
			_, _ = io.WriteString(w, " second")
		})
		var head []byte
		tr := &retryhttp.Transport{
			Base: retrytest.HandlerTransport(h),
			CheckResponse: func(_ *http.Response, h []byte) error {
				head = h
				return nil
			},
		}
		start := time.Now()
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "the peek's bound")
		assert.Equal(t, "first", string(head))

		buf := make([]byte, 64)
		n, err := resp.Body.Read(buf)
		require.NoError(t, err)
		assert.Equal(t, "first", string(buf[:n]), "at once")
		assert.Equal(t, 100*time.Millisecond, time.Since(start))
		assert.Equal(t, " second", readAll(t, resp.Body))
	})
}

// Hedged requests are checked as plain ones are.
func TestCheckResponseOnHedgedRequests(t *testing.T) {
	t.Parallel()
	srv := newServer(t, body(`{"status":"busy"}`), body(`{"status":"ok"}`))
	tr := &retryhttp.Transport{
		Hedger:        &retry.Hedger{Delay: time.Hour},
		Policy:        retry.Policy{Clock: retrytest.NewAutoClock()},
		CheckResponse: busyCheck,
	}
	var trace retry.Trace
	req := get(t, srv.URL)
	req = req.WithContext(retryhttp.WithTrace(req.Context(), &trace))
	resp, err := srv.client(tr).Do(req)
	require.NoError(t, err)
	assert.Equal(t, `{"status":"ok"}`, readAll(t, resp.Body))
	assert.Equal(t, []string{"200 OK, CheckResponse failed", ""}, reasons(trace))
}

// Inside an outer retry loop, a response that CheckResponse fails comes
// back as an error, as a retryable status does, and the outer loop retries
// it: an op that checks only the error still sees the failure.
func TestCheckResponseUnderAnOuterLoop(t *testing.T) {
	t.Parallel()
	srv := newServer(t, body(`{"status":"busy"}`), body(`{"status":"ok"}`))
	client := srv.client(&retryhttp.Transport{CheckResponse: busyCheck})
	var got string
	tr, err := retry.Do(context.Background(), func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got = string(b)
		return err
	}, retry.Policy{Clock: retrytest.NewAutoClock()})
	require.NoError(t, err)
	assert.Equal(t, `{"status":"ok"}`, got)
	assert.Equal(t, 2, tr.Attempts())
	var se *retryhttp.StatusError
	require.ErrorAs(t, attemptErrs(tr)[0], &se, "the op's error was the failed 200")
	assert.Equal(t, 200, se.StatusCode)
	assert.Equal(t, 2, srv.hits())
}

// A panic in CheckResponse leaves no body open, on the plain path and the
// hedged one.
func TestCheckResponsePanicClosesTheBody(t *testing.T) {
	t.Parallel()
	for _, hedged := range []bool{false, true} {
		t.Run(fmt.Sprintf("hedged=%v", hedged), func(t *testing.T) {
			t.Parallel()
			var closed atomic.Bool
			base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				resp, err := retrytest.HandlerTransport(body("x")).RoundTrip(req)
				if err == nil {
					resp.Body = &closeFlag{ReadCloser: resp.Body, closed: &closed}
				}
				return resp, err
			})
			tr := &retryhttp.Transport{Base: base, CheckResponse: func(*http.Response, []byte) error { panic("boom") }}
			if hedged {
				tr.Hedger = &retry.Hedger{Delay: time.Hour}
			}
			require.PanicsWithValue(t, "boom", func() { _, _ = tr.RoundTrip(get(t, "http://svc.test/")) })
			assert.True(t, closed.Load())
		})
	}
}

type closeFlag struct {
	io.ReadCloser
	closed *atomic.Bool
}

func (c *closeFlag) Close() error {
	c.closed.Store(true)
	return c.ReadCloser.Close()
}
