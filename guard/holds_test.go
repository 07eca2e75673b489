package guard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHoldWaitClear(t *testing.T) {
	t.Parallel()
	var s guard.Holds
	clk := retrytest.NewAutoClock()
	start := clk.Now()
	left, err := waitHold(&s, context.Background(), clk, "a", false)
	assert.Zero(t, left)
	assert.NoError(t, err)

	s.Hold("a", start, 2*time.Second)
	s.Hold("a", start, time.Second) // a shorter one does not replace it
	assert.True(t, s.Held())
	left, err = waitHold(&s, context.Background(), clk, "b", false)
	assert.Zero(t, left, "another key is not held")
	assert.NoError(t, err)
	assert.Equal(t, start, clk.Now())

	left, err = waitHold(&s, context.Background(), clk, "a", true)
	assert.Equal(t, 2*time.Second, left, "fail fast: how long is left")
	assert.NoError(t, err)

	ctx, cancel := clk.WithDeadline(context.Background(), start.Add(time.Second))
	defer cancel()
	left, err = waitHold(&s, ctx, clk, "a", false)
	assert.Equal(t, 2*time.Second, left, "cannot wait past the deadline")
	assert.NoError(t, err)

	left, err = waitHold(&s, context.Background(), clk, "a", false)
	assert.Zero(t, left)
	assert.NoError(t, err)
	assert.Equal(t, 2*time.Second, clk.Now().Sub(start), "the first after the hold is a probe: it goes at the end")

	e := s.Epoch()
	s.Hold("c", clk.Now(), time.Hour)
	s.Clear("c", e)
	assert.False(t, s.Until("c").IsZero(), "an answer to an attempt sent before the hold does not clear it")
	s.Clear("c", s.Epoch())
	assert.True(t, s.Until("c").IsZero())
	s.Clear("a", s.Epoch())
	assert.False(t, s.Held())
}

func TestSetIsBounded(t *testing.T) {
	t.Parallel()
	var s guard.Holds
	now := time.Now()
	for i := range 3 * guard.HoldMaxKeys {
		s.Hold(fmt.Sprint("k", i), now, time.Hour)
	}
	n := 0
	for i := range 3 * guard.HoldMaxKeys {
		if !s.Until(fmt.Sprint("k", i)).IsZero() {
			n++
		}
	}
	assert.Equal(t, guard.HoldMaxKeys, n)
}

// When a hold lapses, a few probes go; the others wait for what the probes
// learn. A probe's answer that renews the hold sends the others back to
// waiting; one that clears it lets them go, spread over a quarter of the
// hold.
func TestLapsedHoldSendsProbesFirst(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var s guard.Holds
		s.Hold("a", time.Now(), 4*time.Second)
		var gone atomic.Int32
		var mu sync.Mutex
		var at []time.Duration
		start := time.Now()
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				left, err := waitHold(&s, context.Background(), nil, "a", false)
				assert.Zero(t, left)
				assert.NoError(t, err)
				gone.Add(1)
				mu.Lock()
				at = append(at, time.Since(start))
				mu.Unlock()
			})
		}
		time.Sleep(4 * time.Second)
		synctest.Wait()
		assert.Equal(t, int32(guard.HoldProbes), gone.Load(), "the hold lapsed: only the probes went")

		s.Hold("a", time.Now(), 4*time.Second) // a probe's answer: still throttled
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Equal(t, int32(guard.HoldProbes), gone.Load(), "renewed: the others wait again")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, int32(2*guard.HoldProbes), gone.Load(), "lapsed again: new probes")

		s.Clear("a", s.Epoch()) // a probe's answer: served
		synctest.Wait()
		assert.Less(t, gone.Load(), int32(50), "not one burst")
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		last := at[len(at)-1]
		assert.LessOrEqual(t, last, 9*time.Second, "spread over a quarter of the 4s hold")
		assert.Greater(t, last, 8*time.Second)
	})
}

// A hold whose probes never answer ends by time: at its end plus the
// spread, the others go.
func TestHoldWhoseProbesNeverAnswerEndsByTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var s guard.Holds
		start := time.Now()
		s.Hold("a", start, 8*time.Second)
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				_, err := waitHold(&s, context.Background(), nil, "a", false)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		assert.LessOrEqual(t, time.Since(start), 8*time.Second+2*2*time.Second, "the hold, the probes' spread, and a spread of jitter")
		assert.False(t, s.Held())
	})
}

// A hold on a fake clock ends on that clock's time, and a waiter that ctx
// abandons returns its cause.
func TestHoldOnAFakeClock(t *testing.T) {
	t.Parallel()
	var s guard.Holds
	clk := retrytest.NewClock()
	s.Hold("a", clk.Now(), time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := waitHold(&s, ctx, clk, "a", false)
		done <- err
	}()
	d := <-clk.Waits()
	assert.Equal(t, time.Minute, d)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

// Fail fast never waits, for a hold or for its probes.
func TestFailFastNeverWaitsForProbes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var s guard.Holds
		s.Hold("a", time.Now(), 4*time.Second)
		time.Sleep(4 * time.Second)
		for range guard.HoldProbes {
			left, err := waitHold(&s, context.Background(), nil, "a", true)
			require.NoError(t, err)
			assert.Zero(t, left, "a probe goes")
		}
		start := time.Now()
		left, err := waitHold(&s, context.Background(), nil, "a", true)
		require.NoError(t, err)
		assert.Equal(t, time.Second, left, "the probes are out: held until they answer, or the spread ends")
		assert.Zero(t, time.Since(start))
	})
}

// waitHold is Holds.Wait, with a HeldError turned back into the time the
// hold has left (and a nil error), so that the cases read as numbers.
func waitHold(s *guard.Holds, ctx context.Context, clk guard.Clock, key string, failFast bool) (time.Duration, error) {
	err := s.Wait(ctx, clk, key, failFast)
	var held *guard.HeldError
	if errors.As(err, &held) {
		if !errors.Is(err, guard.ErrHeld) {
			panic("a HeldError that does not match ErrHeld")
		}
		return held.Left, nil
	}
	return 0, err
}

// Holds.Rand places the attempts a hold released in its spread: the same
// draws, the same instants, so that a simulation repeats.
func TestHoldRandPlacesReleasedAttempts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := guard.Holds{Rand: func() float64 { return 0.5 }}
		s.Hold("a", time.Now(), 4*time.Second) // a spread of 1s
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		var wg sync.WaitGroup
		for range guard.HoldProbes + 2 {
			wg.Go(func() {
				_, err := waitHold(&s, context.Background(), nil, "a", false)
				assert.NoError(t, err)
				mu.Lock()
				at = append(at, time.Since(start))
				mu.Unlock()
			})
		}
		time.Sleep(4 * time.Second)
		synctest.Wait()
		s.Clear("a", s.Epoch()) // a probe's answer: served
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := []time.Duration{4 * time.Second, 4 * time.Second, 4 * time.Second, 4500 * time.Millisecond, 4500 * time.Millisecond}
		assert.Equal(t, want, at, "the probes at the hold's end, the others half a spread after the clear")
	})
}
