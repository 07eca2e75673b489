package clocks_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry/internal/clocks"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAfterFuncOnAFakeClock(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	fired := make(chan struct{})
	tm := clocks.AfterFunc(clk, time.Second, func() { close(fired) })
	assert.Equal(t, time.Second, clocks.Until(clk, clocks.Now(clk).Add(time.Second)))
	clk.Add(time.Second)
	<-fired
	assert.False(t, tm.Stop(), "it fired")

	tm = clocks.AfterFunc(clk, time.Second, func() { t.Error("a stopped timer fired") })
	assert.True(t, tm.Stop())
	clk.Add(time.Hour)
	assert.Zero(t, clk.Pending(), "nothing left on the clock")
}

func TestAfterFuncOnTheRealClock(t *testing.T) {
	t.Parallel()
	fired := make(chan struct{})
	clocks.AfterFunc(nil, time.Millisecond, func() { close(fired) })
	<-fired
	assert.WithinDuration(t, time.Now(), clocks.Now(nil), time.Second)
}

// Real turns a time on a fake clock into the real time at which the fake
// reaches it, wherever the fake lies on the real clock.
func TestReal(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		clk := retrytest.NewClock()
		time.Sleep(time.Hour) // the fake now lies an hour behind
		assert.Equal(t, time.Now().Add(time.Minute), clocks.Real(clk, clk.Now().Add(time.Minute)))
		clk.Add(3 * time.Hour) // and now two hours ahead
		assert.Equal(t, time.Now().Add(time.Minute), clocks.Real(clk, clk.Now().Add(time.Minute)))
		end := time.Now().Add(time.Second)
		assert.Equal(t, end, clocks.Real(nil, end), "the real clock's times are real")
	})
}
