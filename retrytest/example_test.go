package retrytest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/stormguard/retry"
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
