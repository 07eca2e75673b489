package guard_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// A Limiter bounds the attempts in flight to one service: while its one
// slot is taken, another call is refused without being sent.
func ExampleLimiter() {
	lim, err := guard.NewLimiter(guard.LimiterOptions{Max: 1, MaxQueue: -1})
	if err != nil {
		panic(err)
	}
	p := retry.Policy{Limiter: lim}
	_, err = retry.Do(context.Background(), func(ctx context.Context) error {
		// This attempt holds the slot: another call (on a ctx of its own,
		// not nested in this attempt) is refused.
		tr, err := retry.Do(context.Background(), func(context.Context) error { return nil }, p)
		fmt.Println(tr.Stop(), errors.Is(err, retry.ErrLimited))
		return nil
	}, p)
	fmt.Println(err, lim.Stats().InFlight)
	// Output:
	// limited true
	// <nil> 0
}

// Limiters keeps one Limiter per downstream host: a host whose slots are
// all taken refuses only the calls to it.
func ExampleLimiters() {
	limiters, err := guard.NewLimiters(guard.LimiterOptions{Max: 1, MaxQueue: -1}, 1000)
	if err != nil {
		panic(err)
	}
	k := guard.Keyed{Limiters: limiters}
	call := func(ctx context.Context, host string, op func(context.Context) error) error {
		_, err := retry.Do(ctx, op, retry.Policy{MaxAttempts: 1}.WithGuards(&k, host))
		return err
	}
	_ = call(context.Background(), "search.internal", func(context.Context) error {
		fmt.Println(errors.Is(call(context.Background(), "search.internal", func(context.Context) error { return nil }), retry.ErrLimited))
		fmt.Println(call(context.Background(), "payments.internal", func(context.Context) error { return nil }))
		return nil
	})
	for host, l := range limiters.All() {
		fmt.Println(host, l.Stats().Admitted)
	}
	// Output:
	// true
	// <nil>
	// payments.internal 1
	// search.internal 1
}
