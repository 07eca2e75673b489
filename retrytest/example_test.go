package retrytest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

// An auto-advancing Clock skips each wait as it starts: the test calls
// retry.Do directly, with no goroutine to drive the clock.
func ExampleNewAutoClock() {
	clk := retrytest.NewAutoClock()
	start := clk.Now()
	op := retrytest.Script(errors.New("503"), errors.New("503"))
	trace, err := retry.Do(context.Background(), op.Call, retry.Policy{Clock: clk, Jitter: retry.NoJitter})
	fmt.Println(err, trace.Waits(), clk.Now().Sub(start))
	// Output:
	// <nil> [200ms 400ms] 600ms
}

// ScriptValue is Script for retry.DoValue.
func ExampleScriptValue() {
	op := retrytest.ScriptValue("order-42", errors.New("timeout"))
	v, trace, err := retrytest.DoValue(context.Background(), op.Call, retry.Policy{})
	fmt.Println(v, err, trace.Attempts())
	// Output:
	// order-42 <nil> 2
}

// A HandlerTransport serves a client in-process, through no socket. Inside
// a testing/synctest bubble, that is what lets the bubble's fake time run
// the waits of the retries (see the package doc).
func ExampleHandlerTransport() {
	var calls atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	client := &http.Client{Transport: retrytest.HandlerTransport(h)}
	var body string
	_, err := retry.Do(context.Background(), func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err
	}, retry.Policy{Clock: retrytest.NewAutoClock()})
	fmt.Println(err, calls.Load(), body)
	// Output:
	// <nil> 2 ok
}

// A FaultyHandlerTransport shows that a retried POST has its effect once,
// without a socket: the first attempt is refused, the second runs the
// handler and loses its answer, the third gets that answer replayed by the
// idempotency middleware. Inside testing/synctest it runs on fake time.
func ExampleFaultyHandlerTransport() {
	var orders, requests atomic.Int32
	svc := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "order %d", orders.Add(1))
	})
	m, err := idempotency.New(idempotency.Options{})
	if err != nil {
		panic(err)
	}
	faults := func(*http.Request) retrytest.Fault {
		switch requests.Add(1) {
		case 1:
			return retrytest.Refuse
		case 2:
			return retrytest.DropAnswer
		}
		return retrytest.Deliver
	}
	client := &http.Client{Transport: &retryhttp.Transport{
		Base:               retrytest.FaultyHandlerTransport(m.Handler(svc), faults),
		Policy:             retry.Policy{Clock: retrytest.NewAutoClock()},
		AutoIdempotencyKey: true,
	}}
	resp, err := client.Post("http://svc.test/orders", "application/json", strings.NewReader(`{"item":1}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), "replayed:", resp.Header.Get(idempotency.ReplayedHeader))
	fmt.Println("requests:", requests.Load(), "orders made:", orders.Load())
	// Output:
	// 201 order 1 replayed: true
	// requests: 3 orders made: 1
}

// Run lets calls that run at the same time share one Clock: time moves
// only when every call waits, so each Trace shows its own waits alone. And
// an attempt that hangs, as on a server that never answers, ends at its
// AttemptTimeout in fake time instead of hanging the test.
func ExampleClock_Run() {
	clk := retrytest.NewClock()
	p := retry.Policy{Clock: clk, Jitter: retry.NoJitter, MaxElapsed: time.Minute}

	traces := make([]retry.Trace, 3)
	var wg sync.WaitGroup
	for i := range traces {
		wg.Go(func() {
			op := retrytest.Script(errors.New("503"), errors.New("503"))
			clk.Run(func() { traces[i], _ = retry.Do(context.Background(), op.Call, p) })
		})
	}
	wg.Wait()
	for _, tr := range traces {
		fmt.Println(tr.Attempts(), tr.Waits(), tr.Elapsed())
	}

	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	p.AttemptTimeout, p.MaxAttempts = time.Second, 2
	var tr retry.Trace
	var err error
	clk.Run(func() { tr, err = retry.Do(context.Background(), hang, p) })
	fmt.Println(errors.Is(err, retry.ErrExhausted), tr.Attempts(), tr.Elapsed())
	// Output:
	// 3 [200ms 400ms] 600ms
	// 3 [200ms 400ms] 600ms
	// 3 [200ms 400ms] 600ms
	// true 2 2.2s
}
