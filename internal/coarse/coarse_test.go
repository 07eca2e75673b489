package coarse_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry/internal/coarse"
	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Within a tick the Clock serves the time it read; once the tick has
// passed it reads the clock again.
func TestClockLagsAtMostATick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &coarse.Clock{Tick: time.Millisecond}
		t0 := c.Now()
		assert.True(t, t0.Equal(time.Now()))
		time.Sleep(500 * time.Microsecond)
		assert.True(t, c.Now().Equal(t0), "within the tick: the time read")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.True(t, c.Now().Equal(time.Now()), "after the tick: read again")
		var zero coarse.Clock
		assert.True(t, zero.Now().Equal(time.Now()))
	})
}

func BenchmarkClockNow(b *testing.B) {
	var c coarse.Clock
	b.ReportAllocs()
	for b.Loop() {
		c.Now()
	}
}

func BenchmarkTimeNow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		time.Now()
	}
}
