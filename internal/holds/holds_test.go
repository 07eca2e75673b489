package holds_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stormguard/retry/internal/holds"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHoldWaitClear(t *testing.T) {
	t.Parallel()
	var s holds.Set
	clk := retrytest.NewAutoClock()
	start := clk.Now()
	left, err := s.Wait(context.Background(), clk, "a", false)
	assert.Zero(t, left)
	assert.NoError(t, err)

	s.Hold("a", start.Add(2*time.Second))
	s.Hold("a", start.Add(time.Second)) // a shorter one does not replace it
	assert.True(t, s.Held())
	left, err = s.Wait(context.Background(), clk, "b", false)
	assert.Zero(t, left, "another key is not held")
	assert.NoError(t, err)
	assert.Equal(t, start, clk.Now())

	left, err = s.Wait(context.Background(), clk, "a", true)
	assert.Equal(t, 2*time.Second, left, "fail fast: how long is left")
	assert.NoError(t, err)

	ctx, cancel := clk.WithDeadline(context.Background(), start.Add(time.Second))
	defer cancel()
	left, err = s.Wait(ctx, clk, "a", false)
	assert.Equal(t, 2*time.Second, left, "cannot wait past the deadline")
	assert.NoError(t, err)

	left, err = s.Wait(context.Background(), clk, "a", false)
	assert.Zero(t, left)
	assert.NoError(t, err)
	waited := clk.Now().Sub(start)
	assert.True(t, waited >= 2*time.Second && waited <= 2500*time.Millisecond, "waited %v: the hold and at most a quarter more", waited)

	s.Hold("a", clk.Now().Add(time.Hour))
	s.Clear("a")
	assert.True(t, s.Until("a").IsZero())
	assert.False(t, s.Held())
}

func TestSetIsBounded(t *testing.T) {
	t.Parallel()
	var s holds.Set
	until := time.Now().Add(time.Hour)
	for i := range 3 * holds.MaxKeys {
		s.Hold(fmt.Sprint("k", i), until)
	}
	n := 0
	for i := range 3 * holds.MaxKeys {
		if !s.Until(fmt.Sprint("k", i)).IsZero() {
			n++
		}
	}
	assert.Equal(t, holds.MaxKeys, n)
}
