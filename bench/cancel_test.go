package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	avast4 "github.com/avast/retry-go/v4"
	backoff "github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/hashicorp/go-retryablehttp"
	sethretry "github.com/sethvargo/go-retry"
	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
)

const cancelSamples = 200

// cancelCase is one library in TestCancelLatency.
type cancelCase struct {
	name string
	// run makes a retry whose attempts fail, calling called at each, with
	// about 1s between them, and returns its error.
	run func(ctx context.Context, called func()) error
	// idle, for the HTTP cases, closes the idle connections of the case's
	// transport before the goroutines are counted: a kept-alive connection
	// holds three goroutines (two client, one server) and is no leak.
	idle func()
	// http cases fail with 503 responses, not with errFail.
	http bool
}

// TestCancelLatency measures, for every library, how long a retry that is
// waiting out a 1s backoff takes to return once its ctx is canceled, over
// cancelSamples samples, and whether every goroutine it started is gone
// afterwards. It prints a table; it fails only if stormguard leaves a
// goroutine behind or a library does not return at all. It needs real time,
// about 2ms per sample, so it is skipped under -short.
//
// Each sample starts the retry, waits for the first (failing) attempt, lets
// 2ms pass so that the library is inside its wait, cancels, and takes the
// time from just before cancel() to just after the retry returned, as seen
// by the goroutine that called it. That includes waking that goroutine: a
// library that returns at once still shows the scheduler's latency, which on
// a busy machine is most of it.
//
// The jitter of each library is narrowed where its API allows, so that the
// wait sampled is near 1s and the cancel lands inside it.
func TestCancelLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("measures real time: skipped under -short")
	}
	var failed bool
	fmt.Fprintf(os.Stdout, "\ncancel latency, %d samples each, GOMAXPROCS=%d\n", cancelSamples, runtime.GOMAXPROCS(0))
	fmt.Fprintf(os.Stdout, "%-15s %10s %10s %10s  %-9s %-9s %s\n", "library", "p50", "p99", "max", "is ctx", "has last", "goroutines left")
	for _, c := range cancelCases(t) {
		base := runtime.NumGoroutine()
		lat := make([]time.Duration, 0, cancelSamples)
		isCtx, hasLast := true, true
		for range cancelSamples {
			d, err, ok := cancelOnce(c.run)
			if !ok {
				t.Errorf("%s: did not return within 5s of cancel", c.name)
				failed = true
				break
			}
			lat = append(lat, d)
			isCtx = isCtx && errors.Is(err, context.Canceled)
			hasLast = hasLast && errors.Is(err, errFail)
		}
		if c.idle != nil {
			c.idle()
		}
		left := goroutinesAbove(base)
		if c.name == "stormguard" && left > 0 {
			t.Errorf("stormguard left %d goroutines behind", left)
		}
		if len(lat) == 0 {
			continue
		}
		slices.Sort(lat)
		last := fmt.Sprint(hasLast)
		if c.http {
			last = "n/a"
		}
		fmt.Fprintf(os.Stdout, "%-15s %10v %10v %10v  %-9v %-9s %d\n", c.name,
			rank(lat, 0.50), rank(lat, 0.99), lat[len(lat)-1], isCtx, last, left)
	}
	fmt.Fprintf(os.Stdout, "is ctx: the error matches context.Canceled; has last: it also matches the last attempt's error\n\n")
	if failed {
		t.FailNow()
	}
}

func cancelCases(t *testing.T) []cancelCase {
	const second = time.Second
	fail := func(called func()) func(context.Context) error {
		return func(context.Context) error { called(); return errFail }
	}
	failNoCtx := func(called func()) func() error {
		return func() error { called(); return errFail }
	}
	return []cancelCase{
		{name: "handloop", run: func(ctx context.Context, called func()) error {
			return handloop(ctx, fail(called), second, second) // equal jitter: [0.5s, 1s]
		}},
		{name: "stormguard", run: func(ctx context.Context, called func()) error {
			p := retry.Policy{BaseBackoff: second, MaxBackoff: second, Jitter: retry.EqualJitter}
			_, err := retry.Do(ctx, fail(called), p)
			return err
		}},
		{name: "cenkalti", run: func(ctx context.Context, called func()) error {
			op := failNoCtx(called)
			_, err := backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, op() }, cenkaltiOpts(second, second)...)
			return err
		}},
		{name: "avast-v4", run: func(ctx context.Context, called func()) error {
			// BackOffDelay+RandomDelay: [1s, 1.5s)
			return avast4.Do(failNoCtx(called), avast4.Context(ctx), avast4.Attempts(attempts),
				avast4.Delay(second), avast4.MaxJitter(second/2))
		}},
		{name: "avast-v5", run: func(ctx context.Context, called func()) error {
			return avast5Retrier(ctx, second, second).Do(failNoCtx(called)) // FullJitterBackoffDelay: [0, 1s)
		}},
		{name: "sethvargo", run: func(ctx context.Context, called func()) error {
			op := func(context.Context) error { called(); return errRetryable }
			b := sethretry.WithMaxRetries(attempts-1, sethretry.WithJitterPercent(50, sethretry.NewExponential(second)))
			return sethretry.Do(ctx, b, op)
		}},
		{name: "failsafe", run: func(ctx context.Context, called func()) error {
			p := failsafePolicy(retrypolicy.NewBuilder[any](), second, second) // ±50%
			return failsafe.With(p).WithContext(ctx).Run(failNoCtx(called))
		}},
		retryableHTTPCancel(t),
		stormguardHTTPCancel(t),
	}
}

// cancelOnce runs one sample and returns the cancel → return latency and the
// error of the retry, or ok false if it did not return within 5s.
func cancelOnce(run func(ctx context.Context, called func()) error) (d time.Duration, err error, ok bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan struct{}, 1)
	called := func() {
		select {
		case first <- struct{}{}:
		default:
		}
	}
	type result struct {
		at  time.Time
		err error
	}
	done := make(chan result, 1)
	go func() {
		err := run(ctx, called)
		done <- result{time.Now(), err}
	}()
	<-first
	time.Sleep(2 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case r := <-done:
		return r.at.Sub(start), r.err, true
	case <-time.After(5 * time.Second):
		return 0, nil, false
	}
}

// rank returns the p-quantile of sorted by the nearest-rank method.
func rank(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// goroutinesAbove returns how many more goroutines than base are running,
// after giving the ones that are ending up to a second to end.
func goroutinesAbove(base int) int {
	deadline := time.Now().Add(time.Second)
	for {
		n := runtime.NumGoroutine() - base
		if n <= 0 || time.Now().After(deadline) {
			return max(n, 0)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// retryableHTTPCancel is the go-retryablehttp case: a GET to a server that
// always answers 503, with 1s waits (its DefaultBackoff has no jitter). Its
// server is started before the goroutine baseline is taken.
func retryableHTTPCancel(t *testing.T) cancelCase {
	srv := newFlakyServer(t, 1<<62) // 503 every time
	rc := newRetryableClient(t)
	rc.RetryWaitMin, rc.RetryWaitMax = time.Second, time.Second
	var called func()
	rc.ResponseLogHook = func(retryablehttp.Logger, *http.Response) { called() }
	run := func(ctx context.Context, c func()) error {
		called = c // read by the hook on this same goroutine
		req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		resp, err := rc.Do(req)
		if err == nil {
			drain(resp)
		}
		return err
	}
	return cancelCase{name: "retryablehttp", run: run, idle: rc.HTTPClient.CloseIdleConnections, http: true}
}

// stormguardHTTPCancel is the retryhttp case, set up as retryableHTTPCancel,
// with a 1s backoff under EqualJitter: [0.5s, 1s).
func stormguardHTTPCancel(t *testing.T) cancelCase {
	srv := newFlakyServer(t, 1<<62) // 503 every time
	var called func()
	p := retry.Policy{BaseBackoff: time.Second, MaxBackoff: time.Second, Jitter: retry.EqualJitter}
	p.OnRetry = func(context.Context, retry.Attempt, time.Duration) { called() }
	tr := newTransport(t)
	c := &http.Client{Transport: &retryhttp.Transport{Base: tr, Policy: p}}
	run := func(ctx context.Context, c2 func()) error {
		called = c2 // read by OnRetry on this same goroutine
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err == nil {
			drain(resp)
		}
		return err
	}
	return cancelCase{name: "stormguard-http", run: run, idle: tr.CloseIdleConnections, http: true}
}
