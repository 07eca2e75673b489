package guard_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// Breakers keeps one Breaker per downstream host: the host that is down
// fails fast, and the others are not touched.
func ExampleBreakers() {
	breakers, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 3}, 1000)
	if err != nil {
		panic(err)
	}
	call := func(host string, op func(context.Context) error) error {
		_, err := retry.Do(context.Background(), op, retry.Policy{MaxAttempts: 1, Breaker: breakers.Get(host)})
		return err
	}
	down := func(context.Context) error { return errors.New("503") }
	for range 3 {
		_ = call("payments.internal", down)
	}
	err = call("payments.internal", down)
	fmt.Println(errors.Is(err, retry.ErrBreakerOpen))
	fmt.Println(call("search.internal", func(context.Context) error { return nil }))
	for host, b := range breakers.All() {
		fmt.Println(host, b.State())
	}
	// Output:
	// true
	// <nil>
	// payments.internal open
	// search.internal closed
}

// Throttles keeps one Throttle per downstream host: one host's overload
// sheds only the requests to it.
func ExampleThrottles() {
	throttles, err := guard.NewThrottles(guard.ThrottleOptions{}, 1000)
	if err != nil {
		panic(err)
	}
	overloaded := func(context.Context) error { return errors.New("429") }
	for range 100 {
		_, _ = retry.Do(context.Background(), overloaded, retry.Policy{MaxAttempts: 1, Throttle: throttles.Get("search.internal")})
	}
	fmt.Printf("%.1f %.1f\n", throttles.Get("search.internal").RejectProbability(), throttles.Get("payments.internal").RejectProbability())
	// Output:
	// 0.9 0.0
}
