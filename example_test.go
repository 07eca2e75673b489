package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
)

// Do retries a flaky call until it succeeds.
func ExampleDo() {
	calls := 0
	callService := func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("503 service unavailable")
		}
		return nil
	}

	p := retry.Policy{Jitter: retry.NoJitter} // NoJitter only so that the output is the same every run

	// In a service: trace, err := retry.Do(ctx, callService, p).
	// The examples call retrytest.Do, the same loop on a fake clock, so that
	// they wait no real time.
	trace, err := retrytest.Do(context.Background(), callService, p)
	fmt.Println(err)
	fmt.Println(trace)
	// Output:
	// <nil>
	// 3 attempts, waits [200ms 400ms], 600ms, ok
}

// Do gives up when attempts run out; the error says why and keeps the last
// failure.
func ExampleDo_exhausted() {
	errDown := errors.New("connection refused")
	_, err := retrytest.Do(context.Background(), func(context.Context) error { return errDown }, retry.Policy{})
	fmt.Println(err)
	fmt.Println(errors.Is(err, retry.ErrExhausted), errors.Is(err, errDown))
	// Output:
	// retry: gave up after 4 attempts: connection refused
	// true true
}

// DoValue returns the value of the successful attempt.
func ExampleDoValue() {
	type order struct{ ID string }
	calls := 0
	load := func(ctx context.Context) (order, error) {
		calls++
		if calls == 1 {
			return order{}, errors.New("timeout")
		}
		return order{ID: "A-1"}, nil
	}

	o, trace, err := retrytest.DoValue(context.Background(), load, retry.Policy{})
	fmt.Println(o.ID, err, trace.Attempts())
	// Output:
	// A-1 <nil> 2
}

// When retries run out, serve cached data instead of failing the user: the
// error and the Trace still say that it happened, for logs and metrics.
func ExampleDoValue_fallback() {
	cached := []string{"yesterday's feed"}
	fetch := func(ctx context.Context) ([]string, error) { return nil, errors.New("503") }

	feed, trace, err := retrytest.DoValue(context.Background(), fetch, retry.Policy{MaxAttempts: 2})
	if errors.Is(err, retry.ErrGaveUp) { // attempts, time or the budget ran out
		feed = cached
	}
	fmt.Println(feed, "|", trace.Stop(), "|", err)
	// Output:
	// [yesterday's feed] | attempts exhausted | retry: gave up after 2 attempts: 503
}

// A Policy is a plain value: zero fields take their defaults, so set only
// what differs.
func ExamplePolicy() {
	p := retry.Policy{
		MaxAttempts:    5,
		BaseBackoff:    100 * time.Millisecond,
		MaxBackoff:     2 * time.Second,
		MaxElapsed:     10 * time.Second,
		AttemptTimeout: time.Second,
		Jitter:         retry.BandJitter(0.3),
	}
	fmt.Println(p.Validate())
	fmt.Println(retry.Policy{Factor: 0.5}.Validate())
	// Output:
	// <nil>
	// retry: invalid policy: Factor 0.5 is below 1: backoffs would shrink
}

// Policy.Wait is the pure formula Do uses: here the backoffs of the zero
// Policy, without jitter.
func ExamplePolicy_Wait() {
	p := retry.Policy{Jitter: retry.NoJitter}
	for n := 1; n <= 6; n++ {
		fmt.Print(p.Wait(n, 0, 0), " ")
	}
	fmt.Println()
	// Output:
	// 200ms 400ms 800ms 1.6s 3.2s 5s
}

// Each jitter shapes the same backoff b = 1s differently; u is the random
// draw in [0, 1).
func ExampleJitter() {
	s := retry.Step{N: 3, Backoff: time.Second, PrevWait: 400 * time.Millisecond, BaseBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second}
	for _, j := range []retry.Jitter{retry.NoJitter, retry.FullJitter, retry.EqualJitter, retry.BandJitter(0.3), retry.DecorrelatedJitter} {
		fmt.Printf("%-18v u=0: %-6v u=0.5: %v\n", j, j.Wait(s, 0), j.Wait(s, 0.5))
	}
	// Output:
	// NoJitter           u=0: 1s     u=0.5: 1s
	// FullJitter         u=0: 0s     u=0.5: 500ms
	// EqualJitter        u=0: 500ms  u=0.5: 750ms
	// BandJitter(0.3)    u=0: 700ms  u=0.5: 1s
	// DecorrelatedJitter u=0: 200ms  u=0.5: 700ms
}

// Permanent stops the loop at once: retrying a 400 cannot help.
func ExamplePermanent() {
	calls := 0
	_, err := retry.Do(context.Background(), func(context.Context) error {
		calls++
		return retry.Permanent(errors.New("400 bad request"))
	}, retry.Policy{})
	fmt.Println(calls, err)
	// Output:
	// 1 400 bad request
}

// RetryAfter honours the wait a server asked for, plus the policy's own
// jittered backoff so that clients told the same time do not return together.
func ExampleRetryAfter() {
	calls := 0
	trace, err := retrytest.Do(context.Background(), func(context.Context) error {
		calls++
		if calls == 1 {
			return retry.RetryAfter(errors.New("429 too many requests"), 2*time.Second)
		}
		return nil
	}, retry.Policy{Jitter: retry.NoJitter})
	fmt.Println(trace.Waits(), err)
	// Output:
	// [2.2s] <nil>
}

// A test steps Do through its waits on a retrytest.Clock: each wait appears
// on Waits once its timer is set, so advancing by it cannot race.
func Example_fakeClock() {
	clk := retrytest.NewClock()
	op := retrytest.Always(errors.New("503"))
	done := make(chan error)
	go func() {
		_, err := retry.Do(context.Background(), op.Call, retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter, Clock: clk})
		done <- err
	}()
	for range 2 {
		d := <-clk.Waits()
		fmt.Println("waiting", d)
		clk.Add(d)
	}
	fmt.Println(<-done, "after", op.Calls(), "calls")
	// Output:
	// waiting 200ms
	// waiting 400ms
	// retry: gave up after 3 attempts: 503 after 3 calls
}

// A Budget shared by every call to one service stops retries when most of
// them fail, so a fleet of clients cannot multiply the load on it.
func ExampleBudget() {
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
	if err != nil {
		panic(err)
	}
	p := retry.Policy{Budget: budget}
	down := retrytest.Always(errors.New("503"))
	for range 5 {
		_, _ = retrytest.Do(context.Background(), down.Call, p)
	}
	fmt.Println(down.Calls(), "calls for 5 requests; tokens left:", budget.Tokens())
	// Output:
	// 8 calls for 5 requests; tokens left: 2
}

// DoValue drops the values of failed attempts: an op whose value holds a
// resource releases it itself before it returns an error.
func ExampleDoValue_resource() {
	type rows struct{ closed bool }
	var opened []*rows
	calls := 0
	query := func(ctx context.Context) (*rows, error) {
		calls++
		r := &rows{}
		opened = append(opened, r)
		if calls == 1 {
			r.closed = true // a failed attempt: Do never sees r again, so close it here
			return nil, errors.New("connection reset")
		}
		return r, nil
	}
	r, _, err := retrytest.DoValue(context.Background(), query, retry.Policy{})
	fmt.Println(err, len(opened), opened[0].closed, r.closed)
	// Output:
	// <nil> 2 true false
}

// A Classifier gets the failed Attempt, so "retry a 409 once, then give up"
// is one comparison; everything else goes to the DefaultClassifier.
func ExampleClassifier() {
	errConflict := errors.New("409 conflict")
	p := retry.Policy{Classifier: func(ctx context.Context, a retry.Attempt) retry.Decision {
		if errors.Is(a.Err, errConflict) {
			return retry.Decision{Retry: a.Number < 2, Reason: "409 Conflict"}
		}
		return retry.DefaultClassifier(ctx, a)
	}}
	op := retrytest.Always(errConflict)
	trace, err := retrytest.Do(context.Background(), op.Call, p)
	fmt.Println(op.Calls(), err, "|", trace.Stop())
	// Output:
	// 2 409 conflict | not retried
}

// The error of a Do that gave up says why and after what, for code to read.
func ExampleStopError() {
	_, err := retrytest.Do(context.Background(), retrytest.Always(errors.New("503")).Call,
		retry.Policy{Jitter: retry.NoJitter, MaxElapsed: time.Second})
	var stop *retry.StopError
	if errors.As(err, &stop) {
		fmt.Println(stop.Stop, stop.Attempts, stop.Wait, stop.Err)
	}
	fmt.Println(errors.Is(err, retry.ErrDeadline), errors.Is(err, retry.ErrGaveUp))
	// Output:
	// deadline 3 800ms 503
	// true true
}

// OnDone sees every call end, with its Trace: the place for metrics and
// logs, whatever the outcome.
func ExamplePolicy_onDone() {
	p := retry.Policy{OnDone: func(_ context.Context, t retry.Trace, err error) {
		fmt.Println("done:", t.Stop(), t.Attempts(), "attempts")
	}}
	_, _ = retrytest.Do(context.Background(), retrytest.Script(errors.New("503")).Call, p)
	_, _ = retrytest.Do(context.Background(), retrytest.Always(retry.Permanent(errors.New("400"))).Call, p)
	// Output:
	// done: ok 2 attempts
	// done: not retried 1 attempts
}

// Budgets keeps one Budget per downstream host (or tenant): a host that is
// down spends its own retries, not the others'.
func ExampleBudgets() {
	budgets, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1}, 1000)
	if err != nil {
		panic(err)
	}
	down := retrytest.Always(errors.New("503"))
	for range 10 {
		_, _ = retrytest.Do(context.Background(), down.Call, retry.Policy{Budget: budgets.Get("payments.internal")})
	}
	flaky := retrytest.Script(errors.New("503"))
	_, err = retrytest.Do(context.Background(), flaky.Call, retry.Policy{Budget: budgets.Get("search.internal")})
	fmt.Println(err, flaky.Calls(), budgets.Get("payments.internal").Tokens())
	// Output:
	// <nil> 2 0
}

// A Breaker shared by the calls to one service fails them fast once most
// of them fail, and lets a few probes through after OpenFor.
func ExampleNewBreaker() {
	clk := retrytest.NewClock() // a fake clock, moved by hand
	breaker, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 2, OpenFor: 10 * time.Second, Probes: 1, Clock: clk})
	if err != nil {
		panic(err)
	}
	p := retry.Policy{MaxAttempts: 1, Breaker: breaker, Clock: clk}
	down := func(context.Context) error { return errors.New("503 service unavailable") }
	for range 2 {
		_, _ = retry.Do(context.Background(), down, p)
	}
	fmt.Println(breaker.State())
	_, err = retry.Do(context.Background(), down, p)
	fmt.Println(errors.Is(err, retry.ErrBreakerOpen), err)

	clk.Add(10 * time.Second)
	fmt.Println(breaker.State())
	_, err = retry.Do(context.Background(), func(context.Context) error { return nil }, p)
	fmt.Println(err, breaker.State())
	// Output:
	// open
	// true retry: circuit breaker open before the first attempt
	// half-open
	// <nil> closed
}

// A Throttle shared by the calls to one service sheds them on the client
// while the service rejects most of them.
func ExampleNewThrottle() {
	throttle, err := guard.NewThrottle(guard.ThrottleOptions{Clock: retrytest.NewClock()})
	if err != nil {
		panic(err)
	}
	p := retry.Policy{MaxAttempts: 1, Throttle: throttle}
	for range 20 { // MinRequests: until then, nothing is shed
		_, _ = retry.Do(context.Background(), func(context.Context) error {
			return errors.New("503 service unavailable")
		}, p)
	}
	fmt.Printf("reject probability %.2f\n", throttle.RejectProbability())
	// Output:
	// reject probability 0.90
}

// Next is Do's rule, one step at a time, for a loop that outlives a
// process: a job that keeps its Progress and Trace with it between runs
// (here, in a variable standing for the job's row) gets the waits and the
// stop that Do would have given it.
func ExamplePolicy_Next() {
	p := retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter, BaseBackoff: time.Second}
	type row struct {
		progress retry.Progress
		trace    retry.Trace
	}
	var job row // saved after each attempt, read back by the next process
	for n := 1; ; n++ {
		a := retry.Attempt{Number: n, Err: errors.New("503")}
		job.progress.Attempts = n
		v := p.Next(context.Background(), &a, &job.progress)
		job.trace.Add(a)
		if v.Stop != retry.StopNone {
			job.trace.SetStop(v.Stop)
			fmt.Println(errors.Is(v.Err, retry.ErrExhausted), job.trace.Attempts(), job.trace.Stop())
			return
		}
		fmt.Println("attempt", n, a.Reason, "- run again in", v.Wait)
	}
	// Output:
	// attempt 1 error - run again in 1s
	// attempt 2 error - run again in 2s
	// true 3 attempts exhausted
}

// WithGuards takes the guards a Policy lacks from keyed sets, so that each
// downstream host has a budget and a breaker of its own.
func ExamplePolicy_WithGuards() {
	budgets, _ := guard.NewBudgets(guard.BudgetOptions{}, 100)
	k := guard.Keyed{Budgets: budgets}
	p := retry.Policy{MaxAttempts: 2}.WithGuards(&k, "https://payments.example")
	fmt.Println(p.Budget == budgets.Get("https://payments.example"), p.Breaker == nil)
	// Output:
	// true true
}
