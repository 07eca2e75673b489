// Command demo shows retry.Do at work in four parts: a flaky call retried
// until it succeeds, a permanent error that stops at once, a service that
// stays down until attempts run out, and how jitter spreads a herd of
// clients that all failed at the same instant.
//
//	go run ./examples/demo
package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/stormguard/retry"
)

func main() {
	ctx := context.Background()

	// A service that fails twice with a transient error, then answers.
	calls := 0
	flaky := func(ctx context.Context) error {
		calls++
		if calls <= 2 {
			return errors.New("503 service unavailable")
		}
		return nil
	}
	p := retry.Policy{
		BaseBackoff: 50 * time.Millisecond, // short, so the demo is quick
		OnRetry: func(_ context.Context, a retry.Attempt, wait time.Duration) {
			fmt.Printf("  attempt %d failed (%v), retrying in %v\n", a.Number, a.Err, human(wait))
		},
	}
	fmt.Println("A flaky call:")
	trace, err := retry.Do(ctx, flaky, p)
	fmt.Printf("  err=%v\n  trace: %v\n\n", err, trace)

	// A permanent error: retrying a 400 cannot help, so Do stops at once.
	fmt.Println("A permanent error:")
	trace, err = retry.Do(ctx, func(context.Context) error {
		return retry.Permanent(errors.New("400 bad request"))
	}, p)
	fmt.Printf("  err=%v\n  trace: %v\n\n", err, trace)

	// Attempts run out: the error says why and keeps the last failure.
	fmt.Println("A service that stays down:")
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	trace, err = retry.Do(ctx, func(context.Context) error {
		return refused
	}, retry.Policy{MaxAttempts: 3, BaseBackoff: 20 * time.Millisecond})
	fmt.Printf("  err=%v\n  gave up=%v, why=%v\n  trace: %v\n\n", err, errors.Is(err, retry.ErrGaveUp), trace.Stop(), trace)

	// The storm: 18 clients fail at the same instant. Their first retries,
	// under the zero Policy's delays and three jitters, computed with the
	// same pure formula Do uses.
	fmt.Println("18 clients that failed together retry at (ms, sorted):")
	for _, j := range []retry.Jitter{retry.NoJitter, retry.BandJitter(0.3), retry.FullJitter} {
		pol := retry.Policy{Jitter: j}
		waits := make([]int64, 18)
		for i := range waits {
			waits[i] = pol.Wait(1, 0, rand.Float64()).Milliseconds()
		}
		slices.Sort(waits)
		fmt.Printf("  %-16v %v\n", j, waits)
	}
}

// human rounds a wait for reading: 243µs, 34ms, 1.2s.
func human(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
