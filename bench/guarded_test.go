package bench_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/adaptivethrottler"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
)

// BenchmarkGuarded is a call through a retry budget, a circuit breaker and
// an adaptive throttle, the three guards a service puts in front of a
// downstream, in four scenarios: the first attempt succeeds; three
// failures, then success (1ns delays); the same from 64 goroutines that
// share the guards; and a call refused by an open breaker.
//
// Rows: handloop is the floor, the smallest correct loop written by hand
// over the same guards (guard.Call's protocol, as its doc gives it, and
// the Budget's four calls), with the same full-jitter waits as stormguard
// (a 1ns cap draws zero waits: no timer); stormguard is retry.Do with the
// guards on its Policy; failsafe is failsafe-go's retry policy with its
// budget, circuit breaker and adaptive throttler, composed as its docs
// show.
//
// The guards are sized so that the retry scenarios never refuse (a
// refusal fails the benchmark): three failures in four attempts is an
// overload by the SRE book's rule at its default K of 2, so stormguard's
// throttle accepts up to 5 requests per success here (failsafe's sheds
// past 90% failures), the budgets give back the three tokens a call takes
// (failsafe's lets every in-flight execution be a retry), and each row
// first makes 100 successful calls, so that its windows hold a healthy
// past.
func BenchmarkGuarded(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const failures = attempts - 1

	type scenario struct {
		name     string
		failures int
		parallel bool
		refused  bool
	}
	for _, sc := range []scenario{
		{name: "first-success"},
		{name: "three-failures", failures: failures},
		{name: "goroutines=64", failures: failures, parallel: true},
		{name: "refused", refused: true},
	} {
		// run runs one row: mk is called once per goroutine and returns what
		// makes one logical call; refusal is what that call returns when the
		// open breaker refuses it.
		run := func(b *testing.B, refusal error, mk func() func(op func(context.Context) error) error) {
			b.Helper()
			body := func(next func() bool) {
				call := mk()
				f := newFlaky(sc.failures)
				op := func(context.Context) error { return f.call() }
				if sc.refused {
					// What the refusal matches is checked once, outside
					// the loop: the loop times the call, not errors.Is.
					if err := call(op); !errors.Is(err, refusal) || f.calls != 0 {
						b.Errorf("refused call: err %v, %d calls; want %v, none", err, f.calls, refusal)
						return
					}
				}
				for next() {
					f.reset()
					err := call(op)
					if sc.refused {
						if err == nil || f.calls != 0 {
							b.Errorf("refused call: err %v, %d calls; want a refusal, none", err, f.calls)
							return
						}
						continue
					}
					if err := f.done(err); err != nil {
						b.Error(err)
						return
					}
				}
			}
			if !sc.refused {
				// A window that holds a healthy past, as a running
				// service's does: without it, the first calls' failures,
				// in flight in 64 goroutines before any success, would
				// be shed.
				warm, ok := mk(), func(context.Context) error { return nil }
				for range 100 {
					if err := warm(ok); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
			}
			if sc.parallel {
				b.SetParallelism(32) // 64 goroutines on 2 cores
				b.RunParallel(func(pb *testing.PB) { body(pb.Next) })
				return
			}
			body(b.Loop)
		}
		b.Run(sc.name+"/handloop", func(b *testing.B) {
			g := newOurGuards(b, sc.refused)
			run(b, errHandRefused, func() func(op func(context.Context) error) error {
				return func(op func(context.Context) error) error {
					return handGuarded(ctx, op, g, tinyDelay, tinyDelay)
				}
			})
		})
		b.Run(sc.name+"/stormguard", func(b *testing.B) {
			g := newOurGuards(b, sc.refused)
			p := ourPolicy(tinyDelay, tinyDelay)
			p.Budget, p.Breaker, p.Throttle = g.budget, g.breaker, g.throttle
			run(b, retry.ErrBreakerOpen, func() func(op func(context.Context) error) error {
				return func(op func(context.Context) error) error {
					_, err := retry.Do(ctx, op, p)
					return err
				}
			})
		})
		b.Run(sc.name+"/failsafe", func(b *testing.B) {
			cb := circuitbreaker.NewBuilder[any]().
				WithFailureRateThreshold(0.5, 20, 30*time.Second).
				WithDelay(10 * time.Second).
				Build()
			th := adaptivethrottler.NewBuilder[any]().
				WithFailureRateThreshold(0.9, 20, 2*time.Minute).
				Build()
			rp := failsafePolicy(retrypolicy.NewBuilder[any]().WithBudget(budget.NewBuilder().WithMaxRate(1).Build()), tinyDelay, tinyDelay)
			if sc.refused {
				cb.Open()
			}
			// Outermost first: the breaker counts logical calls and the
			// throttle every attempt, as stormguard's do.
			ex := failsafe.With[any](cb, rp, th)
			run(b, circuitbreaker.ErrOpen, func() func(op func(context.Context) error) error {
				return func(op func(context.Context) error) error {
					return ex.WithContext(ctx).Run(func() error { return op(ctx) })
				}
			})
		})
	}
}

// ourGuards are stormguard's guards for one row.
type ourGuards struct {
	budget   *guard.Budget
	breaker  *guard.Breaker
	throttle *guard.Throttle
}

// newOurGuards makes the guards of a row: a token bucket that three
// failures a call do not drain, the default breaker, and a throttle that
// sheds past 5 requests per success; with open, the breaker is opened
// first (MinCalls failed calls, then it stays open for its 10s).
func newOurGuards(tb testing.TB, open bool) ourGuards {
	tb.Helper()
	bud, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 1000, TokenRatio: attempts - 1})
	if err != nil {
		tb.Fatal(err)
	}
	br, err := guard.NewBreaker(guard.BreakerOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	th, err := guard.NewThrottle(guard.ThrottleOptions{K: 5})
	if err != nil {
		tb.Fatal(err)
	}
	if open {
		openBreaker(tb, br)
	}
	return ourGuards{budget: bud, breaker: br, throttle: th}
}

// openBreaker fails calls through br until it opens.
func openBreaker(tb testing.TB, br *guard.Breaker) {
	tb.Helper()
	p := retry.Policy{MaxAttempts: 1, Breaker: br}
	fail := func(context.Context) error { return errFail }
	for range 1000 {
		if br.State() == guard.BreakerOpen {
			return
		}
		retry.Do(context.Background(), fail, p)
	}
	tb.Fatalf("breaker still %v", br.State())
}

// errHandRefused is what handGuarded returns for an attempt a guard
// refused: made once, as a hand-written loop would.
var errHandRefused = errors.New("refused by a guard")

// handGuarded is the guarded floor: handloop through g's Budget, Breaker
// and Throttle by hand, following guard.Call's protocol (StartFast with no
// defer while the breaker is closed, as retry.Do does), with full-jitter
// waits from base doubling to maxDelay and a timer only for a wait above
// zero. It keeps no record of the attempts, and its refusal is one error
// made once.
func handGuarded(ctx context.Context, op func(context.Context) error, g ourGuards, base, maxDelay time.Duration) error {
	var c guard.Call
	if !c.StartFast(g.throttle, g.breaker) {
		// Not closed: a first attempt may take a half-open probe, which a
		// panic must give back.
		c.Start(g.throttle, g.breaker)
		defer c.Abandon()
	}
	var t *time.Timer
	for n := 1; ; n++ {
		if c.Admit(n) != guard.NotRefused {
			c.End()
			return errHandRefused
		}
		err := op(ctx)
		if err == nil {
			g.budget.Succeeded()
			c.Succeeded()
			c.End()
			if t != nil {
				t.Stop()
			}
			return nil
		}
		c.Attempted(guard.OutcomeOf(ctx.Err(), true))
		g.budget.Failed()
		if n == attempts || !g.budget.AllowRetry() || !g.breaker.AllowRetry() {
			c.End()
			if t != nil {
				t.Stop()
			}
			return err
		}
		if d := rand.N(min(base<<(n-1), maxDelay)); d > 0 {
			if t == nil {
				t = time.NewTimer(d)
			} else {
				t.Reset(d)
			}
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			c.End()
			if t != nil {
				t.Stop()
			}
			return context.Cause(ctx)
		}
	}
}

// BenchmarkGuardedHTTPRefused is a GET that an open breaker refuses: what
// a retryhttp.Transport costs before it can say no, against a RoundTripper
// written by hand that asks the same breaker through guard.Call and
// refuses with one error made once. Base is never reached: a row that
// reached it fails. The stormguard row has the breaker on the Transport's
// Policy; stormguard-keyed has it in Guards.Breakers, found by the
// request's origin, against handcheck-keyed, which finds its own by host.
func BenchmarkGuardedHTTPRefused(b *testing.B) {
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/x", nil)
	if err != nil {
		b.Fatal(err)
	}
	base := roundTripFunc(func(*http.Request) (*http.Response, error) {
		b.Error("Base reached: the breaker let the request through")
		return nil, errFail
	})
	check := func(b *testing.B, rt http.RoundTripper, refusal error) {
		if _, err := rt.RoundTrip(req); !errors.Is(err, refusal) {
			b.Fatalf("RoundTrip: %v, want %v", err, refusal)
		}
		for b.Loop() {
			if _, err := rt.RoundTrip(req); err == nil {
				b.Fatal("RoundTrip: no error, want a refusal")
			}
		}
	}
	b.Run("handcheck", func(b *testing.B) {
		br := openedBreaker(b)
		check(b, &handBreakerTransport{base: base, br: br}, errHandRefused)
	})
	b.Run("handcheck-keyed", func(b *testing.B) {
		// The same, with a breaker per host, found by req.URL.Host: the
		// cheapest key a hand-written check could take.
		brs, err := guard.NewBreakers(guard.BreakerOptions{}, 16)
		if err != nil {
			b.Fatal(err)
		}
		openBreaker(b, brs.Get("127.0.0.1:1"))
		check(b, roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return (&handBreakerTransport{base: base, br: brs.Get(req.URL.Host)}).RoundTrip(req)
		}), errHandRefused)
	})
	b.Run("stormguard", func(b *testing.B) {
		br := openedBreaker(b)
		check(b, &retryhttp.Transport{Base: base, Policy: retry.Policy{Breaker: br}}, retry.ErrBreakerOpen)
	})
	b.Run("stormguard-keyed", func(b *testing.B) {
		brs, err := guard.NewBreakers(guard.BreakerOptions{}, 16)
		if err != nil {
			b.Fatal(err)
		}
		openBreaker(b, brs.Get("http://127.0.0.1:1"))
		check(b, &retryhttp.Transport{Base: base, Guards: guard.Keyed{Breakers: brs}}, retry.ErrBreakerOpen)
	})
}

// openedBreaker returns a default Breaker, opened.
func openedBreaker(tb testing.TB) *guard.Breaker {
	br, err := guard.NewBreaker(guard.BreakerOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	openBreaker(tb, br)
	return br
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// handBreakerTransport is the hand-written check: one attempt through br,
// admitted and told of its outcome by guard.Call's protocol.
type handBreakerTransport struct {
	base http.RoundTripper
	br   *guard.Breaker
}

func (t *handBreakerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var c guard.Call
	if !c.StartFast(nil, t.br) {
		c.Start(nil, t.br)
		defer c.Abandon()
	}
	if c.Admit(1) != guard.NotRefused {
		c.End()
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errHandRefused
	}
	resp, err := t.base.RoundTrip(req)
	switch {
	case err == nil && !retryableStatus(resp.StatusCode):
		c.Succeeded()
	default:
		c.Attempted(guard.OutcomeOf(req.Context().Err(), true))
	}
	c.End()
	return resp, err
}
