package loadgen_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/stormguard/retry/internal/loadgen"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A Server does at most its slots at once; Over counts the entries that
// find more inside than the limit it reads; a Run counts what ends in its
// window after the warmup, and its percentiles are of those.
func TestServerAndRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := loadgen.NewServer(2, 10*time.Millisecond)
		limit := 3
		s.Watch(func() int { return limit })
		rec := &loadgen.Recorder{}
		r := loadgen.Run(t.Context(), rec, 4, 0, 100*time.Millisecond, time.Second, func(ctx context.Context, _ int) {
			start := time.Now()
			if s.Serve(ctx) == nil {
				rec.Attempt(start, true)
			}
		})
		assert.Equal(t, 4, s.MaxInside())
		assert.Equal(t, 3, s.MaxLimit())
		assert.Positive(t, s.Over(), "4 inside, a limit of 3")
		// 2 slots of 10 ms: 200 a second, 180 in the 900 ms window.
		assert.InDelta(t, 200, r.Goodput, 5)
		assert.Equal(t, 20*time.Millisecond, r.P50, "two waiting for each slot: 10 ms of wait, 10 of work")
		assert.Equal(t, r.Goodput, r.Offered)
		assert.Zero(t, r.Refused)
	})
}
