package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Property tests: random policies and random failure scripts, each drawn from
// a fixed seed, run through Do on both fake clocks: the retrytest.Clock
// (Policy.Clock set) and a synctest bubble (the real clock's code path). Each
// run checks every property of issue 6 against what op and the clock saw.
// To replay one: go test -run 'TestProperties/mock/seed=17'.

// Runs per clock. The mock clock sleeps a real millisecond per step, so it
// gets fewer.
const (
	mockRuns     = 150
	synctestRuns = 400
)

func TestProperties(t *testing.T) {
	t.Parallel()
	t.Run("mock", func(t *testing.T) {
		t.Parallel()
		for seed := range uint64(mockRuns) {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				sc := newScenario(seed)
				checkProperties(t, sc, runOnMockClock(t, sc))
			})
		}
	})
	t.Run("synctest", func(t *testing.T) {
		t.Parallel()
		for seed := range uint64(synctestRuns) {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				sc := newScenario(seed)
				var r *run
				synctest.Test(t, func(t *testing.T) { r = runInBubble(t, sc) })
				checkProperties(t, sc, r)
			})
		}
	})
}

// step is what op does on one call.
type step struct {
	err    error         // what it returns; nil is success
	took   time.Duration // fake time the call takes, cut short when its ctx ends
	cancel bool          // cancel the caller's ctx during the call
}

// scenario is one random run: a valid policy, op's script (past its end op
// succeeds), and maybe a cancel from outside.
type scenario struct {
	p          retry.Policy
	script     []step
	cancelWait int // cancel the caller's ctx during the k-th wait; 0: no
	cancelHook int // cancel it from OnRetry before the k-th wait; 0: no
}

func (sc scenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Policy{MaxAttempts: %d, BaseBackoff: %v, Factor: %g, MaxBackoff: %v, MaxElapsed: %v, AttemptTimeout: %v}, script [",
		sc.p.MaxAttempts, sc.p.BaseBackoff, sc.p.Factor, sc.p.MaxBackoff, sc.p.MaxElapsed, sc.p.AttemptTimeout)
	for i, s := range sc.script {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v/%v", s.err, s.took)
		if s.cancel {
			b.WriteString("/cancel")
		}
	}
	fmt.Fprintf(&b, "], cancel in wait %d, in OnRetry %d", sc.cancelWait, sc.cancelHook)
	return b.String()
}

func newScenario(seed uint64) scenario {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	pick := func(n int) int { return r.IntN(n) }

	var p retry.Policy
	p.MaxAttempts = []int{0, 1, 2, 3, 5, 8, -1}[pick(7)]
	if pick(4) > 0 {
		p.BaseBackoff = between(time.Microsecond, []time.Duration{time.Millisecond, 100 * time.Millisecond, 2 * time.Second}[pick(3)])
	}
	if p.MaxAttempts < 0 && p.BaseBackoff != 0 {
		p.BaseBackoff = max(p.BaseBackoff, retry.MinUnboundedWait) // or Validate rejects it
	}
	p.Factor = []float64{0, 1, 1.5, 2, 3, 10, 1e308}[pick(7)]
	base := effectiveOf(p).base
	if pick(3) > 0 {
		p.MaxBackoff = between(base, 20*base)
	}
	if p.MaxAttempts < 0 || pick(2) == 0 {
		p.MaxElapsed = between(time.Millisecond, []time.Duration{time.Second, 10 * time.Second, 2 * time.Minute}[pick(3)])
	}
	if pick(3) == 0 {
		p.AttemptTimeout = between(time.Millisecond, 5*time.Second)
	}
	j := []retry.Jitter{retry.NoJitter, retry.FullJitter, retry.EqualJitter, retry.DecorrelatedJitter, retry.BandJitter(r.Float64())}[pick(5)]
	p.Jitter = retrytest.Seeded(j, seed) // the draws too come from the seed

	sc := scenario{p: p}
	for range 1 + pick(10) {
		var s step
		switch k := pick(40); {
		case k < 22:
			s.err = errUnavailable
		case k < 24:
			s.err = retry.Permanent(errBadRequest)
		case k < 30:
			after := []time.Duration{-time.Second, 0, between(0, 2*effectiveOf(p).maxDelay), between(0, 10*time.Minute)}[pick(4)]
			s.err = retry.RetryAfter(errUnavailable, after)
		case k < 34:
			s.err, s.took = errUnavailable, between(0, 10*time.Second) // a slow attempt, maybe cut by a timeout
		case k < 35:
			s.err = fmt.Errorf("op gave up: %w", context.Canceled)
		case k < 37:
			s.err = context.DeadlineExceeded
		case k < 38:
			s.err = nil // success before the script ends
		default:
			s.err, s.cancel = errUnavailable, true
		}
		if s.took == 0 && pick(3) == 0 {
			s.took = between(0, time.Second)
		}
		sc.script = append(sc.script, s)
	}
	switch pick(6) {
	case 0:
		sc.cancelWait = 1 + pick(len(sc.script))
	case 1:
		sc.cancelHook = 1 + pick(len(sc.script))
	}
	return sc
}

// run is what one Do did, as op, OnRetry and the clock saw it.
type run struct {
	trace     retry.Trace
	err       error
	returned  []error         // what each call of op returned
	gaps      []time.Duration // fake time from the end of each call to the start of the next
	announced []time.Duration // the waits OnRetry was told of
	elapsed   time.Duration   // fake time from calling Do to its return

	canceledAfter int // calls made when the caller's ctx was canceled; -1 if never
	lateCalls     int // calls of op that began after the cancel
}

// fakeTime is the fake clock that a run's op spends its time on.
type fakeTime interface {
	Now() time.Time
	// pass lets d pass, or less if ctx ends first.
	pass(ctx context.Context, d time.Duration)
}

// mockTime lets op's time pass on a retrytest.Clock. A clock.Mock must be
// moved by one goroutine at a time, so op asks the test's goroutine, which
// also steps the clock through Do's waits, to move it.
type mockTime struct {
	*retrytest.Clock
	moves chan move
}

type move struct {
	d    time.Duration
	done chan struct{}
}

func (m mockTime) pass(ctx context.Context, d time.Duration) {
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, dl.Sub(m.Now())) // op ends at its deadline, as one that honours its ctx does
	}
	if d > 0 {
		mv := move{d, make(chan struct{})}
		m.moves <- mv
		<-mv.done
	}
}

type bubbleTime struct{}

func (bubbleTime) Now() time.Time { return time.Now() }

func (bubbleTime) pass(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

// recorder plays a scenario's op and hooks and records what they saw. Do
// calls op and OnRetry on its goroutine; the cancel may come from another.
type recorder struct {
	sc     scenario
	clock  fakeTime
	cancel context.CancelFunc

	mu            sync.Mutex
	returned      []error
	starts, ends  []time.Time
	announced     []time.Duration
	canceledAfter atomic.Int64
	lateCalls     atomic.Int64
}

func newRecorder(sc scenario, clock fakeTime, cancel context.CancelFunc) *recorder {
	rec := &recorder{sc: sc, clock: clock, cancel: cancel}
	rec.canceledAfter.Store(-1)
	return rec
}

func (rec *recorder) cancelNow() {
	rec.mu.Lock()
	calls := len(rec.returned)
	rec.mu.Unlock()
	rec.canceledAfter.CompareAndSwap(-1, int64(calls))
	rec.cancel()
}

func (rec *recorder) op(ctx context.Context) error {
	if rec.canceledAfter.Load() >= 0 {
		rec.lateCalls.Add(1)
	}
	rec.mu.Lock()
	n := len(rec.starts)
	rec.starts = append(rec.starts, rec.clock.Now())
	rec.mu.Unlock()

	var s step // past the script: success
	if n < len(rec.sc.script) {
		s = rec.sc.script[n]
	}
	err := s.err
	if s.took > 0 {
		rec.clock.pass(ctx, s.took)
		if cerr := ctx.Err(); cerr != nil {
			err = cerr // cut short: an op reports its ctx's end
		}
	}
	rec.mu.Lock()
	rec.ends = append(rec.ends, rec.clock.Now())
	rec.returned = append(rec.returned, err)
	rec.mu.Unlock()
	if s.cancel {
		rec.cancelNow()
	}
	return err
}

func (rec *recorder) onRetry(_ context.Context, a retry.Attempt, wait time.Duration) {
	rec.mu.Lock()
	rec.announced = append(rec.announced, wait)
	rec.mu.Unlock()
	if a.Number == rec.sc.cancelHook {
		rec.cancelNow()
	}
}

func (rec *recorder) result(tr retry.Trace, err error, elapsed time.Duration) *run {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r := &run{
		trace: tr, err: err, elapsed: elapsed,
		returned:      rec.returned,
		announced:     rec.announced,
		canceledAfter: int(rec.canceledAfter.Load()),
		lateCalls:     int(rec.lateCalls.Load()),
	}
	for i := 1; i < len(rec.starts); i++ {
		r.gaps = append(r.gaps, rec.starts[i].Sub(rec.ends[i-1]))
	}
	return r
}

// runOnMockClock runs the scenario with Policy.Clock a retrytest.Clock,
// stepping it through each wait by hand, or cancelling in the one chosen.
func runOnMockClock(t *testing.T, sc scenario) *run {
	t.Helper()
	clk := retrytest.NewClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	moves := make(chan move)
	rec := newRecorder(sc, mockTime{clk, moves}, cancel)
	p := sc.p
	p.Clock, p.OnRetry = clk, rec.onRetry

	t0 := clk.Now()
	done := start(ctx, rec.op, p)
	var stepped []time.Duration
	for waits := 1; ; waits++ {
		select {
		case res := <-done:
			r := rec.result(res.trace, res.err, clk.Now().Sub(t0))
			if r.canceledAfter >= 0 && len(stepped) > len(r.gaps) {
				// A wait whose timer was set just as the cancel came: the
				// clock moved, but op was rightly not called after it.
				stepped = stepped[:len(r.gaps)]
			}
			assert.Equal(t, nilIfEmpty(stepped), r.gaps, "the waits the clock was stepped through, against the gaps between calls: %v", sc)
			requireNoTimers(t, clk)
			return r
		case d := <-clk.Waits():
			if waits == sc.cancelWait {
				rec.cancelNow() // and leave the wait pending: the cancel alone must end it
				continue
			}
			clk.Add(d)
			stepped = append(stepped, d)
		case mv := <-moves:
			clk.Add(mv.d)
			close(mv.done)
			waits-- // not a wait of Do's
		case <-time.After(watchdog):
			require.FailNow(t, "Do did not return", "%v", sc)
		}
	}
}

// runInBubble runs the scenario inside a synctest bubble with the real
// clock, where a cancel during a wait comes from a goroutine that wakes
// halfway through it.
func runInBubble(t *testing.T, sc scenario) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := newRecorder(sc, bubbleTime{}, cancel)
	p := sc.p
	p.OnRetry = func(ctx context.Context, a retry.Attempt, wait time.Duration) {
		rec.onRetry(ctx, a, wait)
		if a.Number == sc.cancelWait && wait >= 2 {
			go func() {
				time.Sleep(wait / 2)
				rec.cancelNow()
			}()
		}
	}
	start := time.Now()
	tr, err := retry.Do(ctx, rec.op, p)
	r := rec.result(tr, err, time.Since(start))
	synctest.Wait() // the cancel goroutine, if any, has ended
	return r
}

// checkProperties checks one run against the properties of issue 6.
func checkProperties(t *testing.T, sc scenario, r *run) {
	t.Helper()
	e := effectiveOf(sc.p)
	calls := len(r.returned)
	require.Positive(t, calls, "op never called: %v", sc)
	last := r.returned[calls-1]

	// Trace.Attempts() is the number of calls; Trace.Waits() the waits
	// actually slept, which OnRetry announced.
	require.Equal(t, calls, r.trace.Attempts(), "Trace.Attempts() against op's calls: %v", sc)
	delays := r.trace.Waits()
	require.Equal(t, r.gaps, nilIfEmpty(delays), "Trace.Waits() against the fake time between calls: %v", sc)
	require.GreaterOrEqual(t, len(r.announced), len(delays), "%v", sc)
	require.Equal(t, nilIfEmpty(delays), nilIfEmpty(r.announced[:len(delays)]), "Trace.Waits() against OnRetry's waits: %v", sc)
	if len(r.announced) > len(delays) {
		require.Equal(t, len(delays)+1, len(r.announced), "%v", sc)
		require.GreaterOrEqual(t, r.canceledAfter, 0, "a wait OnRetry announced was not slept, with no cancel: %v", sc)
	}
	for i, a := range slices.Collect(r.trace.All()) {
		require.Equal(t, i+1, a.Number, "%v", sc)
		require.True(t, errors.Is(a.Err, r.returned[i]), "Attempt %d's Err is not what op returned: %v", i+1, sc)
	}

	// calls ≤ MaxAttempts.
	if e.attempts > 0 {
		require.LessOrEqual(t, calls, e.attempts, "calls > MaxAttempts: %v", sc)
	}

	// Only what the Classifier retries is retried: never a Permanent error.
	for i, err := range r.returned[:calls-1] {
		d := retry.DefaultClassifier(context.Background(), retry.Attempt{Err: err})
		require.True(t, err != nil && d.Retry, "call %d returned %v (%q) and was retried: %v", i+1, err, d.Reason, sc)
	}

	// No wait > MaxBackoff, unless the callee asked for more: then After plus
	// the jittered backoff, at most After + MaxBackoff.
	for i, w := range r.announced {
		d := retry.DefaultClassifier(context.Background(), retry.Attempt{Err: r.returned[i]})
		lo, hi := time.Duration(0), e.maxDelay
		if d.RetryAfter > 0 {
			lo, hi = d.RetryAfter, addSat(d.RetryAfter, e.maxDelay)
		}
		require.True(t, w >= lo && w <= hi, "wait %d = %v, want within [%v, %v]: %v", i+1, w, lo, hi, sc)
	}

	// Elapsed on the fake clock ≤ MaxElapsed whenever it is set.
	if sc.p.MaxElapsed > 0 {
		require.LessOrEqual(t, r.elapsed, sc.p.MaxElapsed, "elapsed > MaxElapsed: %v", sc)
		require.LessOrEqual(t, r.trace.Elapsed(), sc.p.MaxElapsed, "Trace.Elapsed() > MaxElapsed: %v", sc)
	}

	// After a cancel, op is never called again; Do's error says so and keeps
	// the last error.
	if r.canceledAfter >= 0 {
		require.Zero(t, r.lateCalls, "op called after the cancel: %v", sc)
		require.Equal(t, r.canceledAfter, calls, "%v", sc)
		if last != nil {
			require.ErrorIs(t, r.err, context.Canceled, "%v", sc)
			require.ErrorIs(t, r.err, last, "the last error was dropped on cancel: %v", sc)
		}
		return
	}

	// Otherwise Do stopped for one of its documented reasons.
	d := retry.DefaultClassifier(context.Background(), retry.Attempt{Err: last})
	switch {
	case last == nil:
		require.NoError(t, r.err, "%v", sc)
		require.Equal(t, retry.StopSuccess, r.trace.Stop())
	case !d.Retry:
		require.Equal(t, last, r.err, "a non-retryable error must come back as it is: %v", sc)
		require.Equal(t, retry.StopNotRetryable, r.trace.Stop())
		require.Equal(t, d.Reason, r.trace.Last().Reason)
	case errors.Is(r.err, retry.ErrExhausted):
		require.Equal(t, e.attempts, calls, "ErrExhausted before MaxAttempts: %v", sc)
		require.ErrorIs(t, r.err, last)
	default:
		require.ErrorIs(t, r.err, retry.ErrDeadline, "%v", sc)
		require.ErrorIs(t, r.err, last)
		require.Positive(t, sc.p.MaxElapsed, "ErrDeadline with no deadline: %v", sc)
	}
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// TestSlowHooksStillBoundedByMaxElapsed: the time a Classifier or OnRetry
// takes counts against MaxElapsed too: a hook that eats the slack must not
// make Do run past MaxElapsed or call op with a ctx that has already ended.
func TestSlowHooksStillBoundedByMaxElapsed(t *testing.T) {
	t.Parallel()
	for _, hook := range []string{"Classifier", "OnRetry"} {
		t.Run(hook, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				const maxElapsed = 3 * time.Second
				slowOnce := sync.OnceFunc(func() { time.Sleep(2500 * time.Millisecond) }) // within MaxElapsed, but it eats the slack
				p := retry.Policy{MaxAttempts: 3, BaseBackoff: time.Second, Factor: 1, Jitter: retry.NoJitter, MaxElapsed: maxElapsed}
				switch hook {
				case "Classifier":
					p.Classifier = func(ctx context.Context, a retry.Attempt) retry.Decision {
						slowOnce()
						return retry.DefaultClassifier(ctx, a)
					}
				case "OnRetry":
					p.OnRetry = func(context.Context, retry.Attempt, time.Duration) { slowOnce() }
				}
				var calls, dead int
				op := func(ctx context.Context) error {
					calls++
					if ctx.Err() != nil {
						dead++
					}
					return errUnavailable
				}
				start := time.Now()
				_, err := retry.Do(context.Background(), op, p)
				elapsed := time.Since(start)

				require.ErrorIs(t, err, retry.ErrDeadline)
				assert.Zero(t, dead, "op called %d times with its ctx already past MaxElapsed", dead)
				assert.LessOrEqual(t, elapsed, maxElapsed, "Do returned after %v, past MaxElapsed %v", elapsed, maxElapsed)
				assert.Equal(t, 1, calls, "the 1s wait no longer fits after the hook's 2.5s")
			})
		})
	}
}
