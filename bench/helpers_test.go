package bench_test

// Shared fixtures: how every library is configured, the reference loop, the
// flaky operation and the HTTP test server.
//
// Every library is set up as closely as its API allows to the same policy:
// at most 4 attempts, exponential delays from base doubling up to a cap,
// jitter on, and a ctx that cuts waits short. The differences that remain
// are noted at each constructor; BENCHMARKS.md lists them all.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	avast4 "github.com/avast/retry-go/v4"
	avast5 "github.com/avast/retry-go/v5"
	backoff "github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	sethretry "github.com/sethvargo/go-retry"
	"github.com/stormguard/retry"
)

const (
	attempts = 4 // calls of op, the first included

	// The delays of a policy in production; they matter only to the
	// first-success scenarios, where no wait happens.
	prodBase = 200 * time.Millisecond
	prodMax  = 5 * time.Second

	// The smallest delay every library accepts, for the retry scenarios:
	// they measure the loop and its timers, not sleeping.
	tinyDelay = time.Nanosecond
)

var (
	errFail = errors.New("transient failure")
	// errRetryable is errFail as sethvargo/go-retry wants it: that library
	// retries only errors wrapped by RetryableError. It is made once so that
	// the wrapping costs no allocation per failure.
	errRetryable = sethretry.RetryableError(errFail)
)

// succeed is the operation of the first-success scenarios. It is not
// inlined, so that every row, direct included, pays for one real call.
//
//go:noinline
func succeed(context.Context) error { return nil }

// flaky fails the first failures calls since its last reset with err, then
// succeeds. It is per goroutine: nothing in it is synchronised.
type flaky struct {
	err      error
	failures int
	calls    int
}

func newFlaky(failures int) *flaky { return &flaky{err: errFail, failures: failures} }

func (f *flaky) reset() { f.calls = 0 }

//go:noinline
func (f *flaky) call() error {
	f.calls++
	if f.calls <= f.failures {
		return f.err
	}
	return nil
}

// done reports whether the logical call ended as it should: success after
// exactly failures+1 calls.
func (f *flaky) done(err error) error {
	if err != nil {
		return err
	}
	if f.calls != f.failures+1 {
		return fmt.Errorf("op called %d times, want %d", f.calls, f.failures+1)
	}
	return nil
}

// ourPolicy is stormguard's policy: 4 attempts, factor 2 and FullJitter
// (uniform in [0, d)) are its defaults.
func ourPolicy(base, maxDelay time.Duration) retry.Policy {
	return retry.Policy{BaseBackoff: base, MaxBackoff: maxDelay}
}

// cenkaltiOpts configures cenkalti/backoff. Its jitter is ±RandomizationFactor
// around d (no full jitter exists), and the cap applies before the jitter, so
// a wait can reach 1.5×MaxInterval. The ExponentialBackOff in the options is
// stateful and not safe for concurrent use: each goroutine needs its own
// options (Retry resets it at the start of every call, so one goroutine may
// reuse them). MaxElapsedTime is switched off (its default is 15 min) to
// match the other libraries, which bound a call only by its ctx.
func cenkaltiOpts(base, maxDelay time.Duration) []backoff.RetryOption {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     base,
		RandomizationFactor: 0.5,
		Multiplier:          2,
		MaxInterval:         maxDelay,
	}
	return []backoff.RetryOption{
		backoff.WithBackOff(b),
		backoff.WithMaxTries(attempts),
		backoff.WithMaxElapsedTime(0),
	}
}

// avast4Opts configures avast/retry-go v4, called as retry.Do(op, opts...)
// per call. FullJitterBackoffDelay draws from [0, base·2^n) with n = 1 for
// the first retry: its first ceiling is 2·base where the others use base.
// Errors of every attempt are kept (its default), and op gets no ctx.
func avast4Opts(ctx context.Context, base, maxDelay time.Duration) []avast4.Option {
	return []avast4.Option{
		avast4.Context(ctx),
		avast4.Attempts(attempts),
		avast4.Delay(base),
		avast4.MaxDelay(maxDelay),
		avast4.DelayType(avast4.FullJitterBackoffDelay),
	}
}

// avast5Retrier configures avast/retry-go v5's reusable Retrier, as
// avast4Opts. The ctx is part of the Retrier, not of the call: a Retrier can
// be reused only by calls that share one ctx, so a per-request ctx needs a
// new Retrier per request (which costs what avast-v4 costs). The benchmarks
// give it that one ctx and reuse it: its best case.
func avast5Retrier(ctx context.Context, base, maxDelay time.Duration, more ...avast5.Option) *avast5.Retrier {
	return avast5.New(append([]avast5.Option{
		avast5.Context(ctx),
		avast5.Attempts(attempts),
		avast5.Delay(base),
		avast5.MaxDelay(maxDelay),
		avast5.DelayType(avast5.FullJitterBackoffDelay),
	}, more...)...)
}

// sethvargoBackoff configures sethvargo/go-retry: exponential from base,
// capped, then full jitter, 3 retries. Its backoffs are stateful and have no
// Reset, so a new chain is built for every call (four allocations before the
// first attempt), and op must wrap an error in RetryableError for it to be
// retried.
func sethvargoBackoff(base, maxDelay time.Duration) sethretry.Backoff {
	return sethretry.WithMaxRetries(attempts-1,
		sethretry.WithFullJitter(
			sethretry.WithCappedDuration(maxDelay, sethretry.NewExponential(base))))
}

// failsafePolicy configures failsafe-go: exponential from base, factor 2,
// capped, jitter ±50% of the delay (it has no full jitter; the cap applies
// before the jitter). The policy is safe to share; the benchmarks build the
// executor once and bind the ctx per call with WithContext, which copies it.
func failsafePolicy[R any](b retrypolicy.Builder[R], base, maxDelay time.Duration) retrypolicy.RetryPolicy[R] {
	return b.WithMaxAttempts(attempts).
		WithBackoff(base, maxDelay).
		WithJitterFactor(0.5).
		Build()
}

// handloop is the reference loop: the smallest correct one we would write by
// hand. At most 4 calls; delays from base doubling up to maxDelay with equal
// jitter (uniform in [d/2, d]); one timer for all the waits, armed even for a
// zero wait; a select on ctx so that a cancel cuts a wait short; and no call
// of op after ctx ended. It keeps no record of the attempts.
func handloop(ctx context.Context, op func(context.Context) error, base, maxDelay time.Duration) error {
	var t *time.Timer
	for n := 0; ; n++ {
		err := op(ctx)
		if err == nil || n == attempts-1 {
			if t != nil {
				t.Stop()
			}
			return err
		}
		d := min(base<<n, maxDelay)
		d = d/2 + rand.N(d/2+1)
		if t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			t.Stop()
			return fmt.Errorf("%w after %d attempts: %w", context.Cause(ctx), n+1, err)
		}
	}
}

// ---- HTTP fixtures ----

const bodySize = 64 << 10

var payload = bytes.Repeat([]byte("x"), bodySize)

// flakyServer answers every run of three requests with 503, 503, 200, and
// counts what it saw. The benchmarks send one logical request at a time, so
// each one meets exactly that sequence; they check it afterwards.
type flakyServer struct {
	*httptest.Server
	requests  atomic.Int64 // requests answered
	conns     atomic.Int64 // TCP connections accepted
	bodyBytes atomic.Int64 // request body bytes received
}

func newFlakyServer(tb testing.TB, every int) *flakyServer {
	tb.Helper()
	s := &flakyServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.bodyBytes.Add(n)
		if s.requests.Add(1)%int64(every) != 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "try again\n")
			return
		}
		io.WriteString(w, "ok\n")
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	tb.Cleanup(s.Close)
	return s
}

// newTransport returns the transport every HTTP row sends through, each row
// its own, so that no row warms connections for another.
func newTransport(tb testing.TB) *http.Transport {
	tr := &http.Transport{MaxIdleConnsPerHost: 8, DisableCompression: true}
	tb.Cleanup(tr.CloseIdleConnections)
	return tr
}

// bodySource hands out readers over payload and counts the bytes read
// through them: what a library pulls out of the caller's body, first body
// and GetBody replays together.
type bodySource struct{ read atomic.Int64 }

func (s *bodySource) reader() *countingReader {
	c := &countingReader{n: &s.read}
	c.r.Reset(payload)
	return c
}

func (s *bodySource) getBody() (io.ReadCloser, error) { return s.reader(), nil }

// newPut returns a PUT of payload whose GetBody replays it, as
// http.NewRequest makes for a *bytes.Reader, but counted.
func (s *bodySource) newPut(ctx context.Context, url string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, s.reader())
	if err != nil {
		return nil, err
	}
	req.ContentLength = bodySize
	req.GetBody = s.getBody
	return req, nil
}

// countingReader reads a bytes.Reader and counts what it gives out. Its
// WriteTo spares the transport the 32 KiB copy buffer that io.Copy would
// allocate for a plain Reader, as a *bytes.Reader body does.
type countingReader struct {
	r bytes.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReader) WriteTo(w io.Writer) (int64, error) {
	n, err := c.r.WriteTo(w)
	c.n.Add(n)
	return n, err
}

func (c *countingReader) Close() error { return nil }

// Len lets go-retryablehttp learn the length without reading.
func (c *countingReader) Len() int { return c.r.Len() }

// retryableStatus is the reference rule for which answers to retry: 429 and
// every 5xx but 501, as go-retryablehttp and failsafe-go decide.
func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500 && code != http.StatusNotImplemented
}

// drain reads a response body to the end and closes it, so that its
// connection can be reused.
func drain(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// handloopHTTP is handloop for an http.Client: it retries transport errors
// and retryable statuses, drains what it drops, and replays the body with
// GetBody on a shallow copy of the request (the transport may still be
// closing the previous body).
func handloopHTTP(c *http.Client, req *http.Request, base, maxDelay time.Duration) (*http.Response, error) {
	ctx := req.Context()
	var t *time.Timer
	for n := 0; ; n++ {
		resp, err := c.Do(req)
		last := n == attempts-1 || req.Body != nil && req.GetBody == nil
		if last || err == nil && !retryableStatus(resp.StatusCode) {
			if t != nil {
				t.Stop()
			}
			return resp, err
		}
		if err == nil {
			drain(resp)
		}
		d := min(base<<n, maxDelay)
		d = d/2 + rand.N(d/2+1)
		if t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			t.Stop()
			return nil, context.Cause(ctx)
		}
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r := *req
			r.Body = body
			req = &r
		}
	}
}
