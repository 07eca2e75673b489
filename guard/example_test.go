package guard_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
)

// A loop of one's own (here, a queue consumer's) drives the guards through
// a Call, and the retry rule through retry.Policy.Next: two calls fail
// (their attempts used up), which opens the breaker, and the next call is
// refused before anything is sent.
func ExampleCall() {
	clk := retrytest.NewAutoClock()
	br, _ := guard.NewBreaker(guard.BreakerOptions{MinCalls: 2, FailureRatio: 1, Clock: clk})
	p := retry.Policy{MaxAttempts: 3, Breaker: br, Clock: clk}
	publish := func(context.Context) error { return errors.New("broker unavailable") }

	send := func(ctx context.Context) (sent int, err error) {
		var c guard.Call
		c.Start(p.Throttle, p.Breaker)
		defer c.Abandon() // a panic counts as nothing
		pr := retry.Progress{Guard: &c}
		for n := 1; ; n++ {
			if r := c.Admit(n); r != guard.NotRefused {
				c.End()
				return sent, retry.ErrBreakerOpen
			}
			sent++
			err := publish(ctx)
			if err == nil {
				c.Succeeded()
				return sent, nil
			}
			a := retry.Attempt{Number: n, Err: err}
			pr.Attempts = n
			v := p.Next(ctx, &a, &pr)
			if v.Stop != retry.StopNone {
				c.End()
				return sent, v.Err
			}
			w, cancel := clk.WithTimeout(ctx, v.Wait)
			<-w.Done()
			cancel()
		}
	}
	for range 3 {
		sent, err := send(context.Background())
		fmt.Println(sent, errors.Is(err, retry.ErrBreakerOpen), br.State())
	}
	// Output:
	// 3 false closed
	// 3 false open
	// 0 true open
}

// Watch tells of each change of state, once, in order, until stopped.
func ExampleBreaker_Watch() {
	clk := retrytest.NewClock()
	br, _ := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, OpenFor: time.Minute, Probes: 1, Clock: clk})
	stop, err := br.Watch(func(c guard.Change) { fmt.Println(c.From, "->", c.To) })
	if err != nil {
		panic(err)
	}
	defer stop()
	p := retry.Policy{MaxAttempts: 1, Breaker: br, Clock: clk}
	_, _ = retry.Do(context.Background(), func(context.Context) error { return errors.New("503") }, p)
	clk.Add(time.Minute)
	_ = br.State() // half-open on time
	_, _ = retry.Do(context.Background(), func(context.Context) error { return nil }, p)
	// Output:
	// closed -> open
	// open -> half-open
	// half-open -> closed
}

// A ratio budget allows retries while they are at most Ratio of the
// first attempts of the last TTL, plus MinPerSecond a second: here, with
// no traffic yet, only its floor of 2 retries over 10 s. Do tells it of
// each first attempt and each retry it makes.
func ExampleNewBudget_ratio() {
	clk := retrytest.NewAutoClock()
	budget, err := guard.NewBudget(guard.BudgetOptions{Ratio: 0.2, MinPerSecond: 0.2, TTL: 10 * time.Second, Clock: clk})
	if err != nil {
		panic(err)
	}
	fmt.Println("retries allowed:", budget.Tokens())
	tr, err := retry.Do(context.Background(), func(context.Context) error {
		return errors.New("503")
	}, retry.Policy{MaxAttempts: 5, Budget: budget, Clock: clk})
	fmt.Println(tr.Attempts(), "attempts:", errors.Is(err, retry.ErrBudgetExhausted))

	_, err = guard.NewBudget(guard.BudgetOptions{Ratio: 0.2, MaxTokens: 10})
	fmt.Println(errors.Is(err, guard.ErrInvalidOptions))
	// Output:
	// retries allowed: 2
	// 3 attempts: true
	// true
}
