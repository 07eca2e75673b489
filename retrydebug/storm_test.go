package retrydebug_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errDown = errors.New("503")

// The page and the Snapshot show each registered breaker's state and each
// throttle's reject ratio, single and keyed; a breaker reads half-open as
// soon as OpenFor has passed, with no call; the keys in trouble come first.
func TestRecorderShowsBreakersAndThrottles(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	single, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, OpenFor: time.Minute, Clock: clk})
	require.NoError(t, err)
	keyed, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, Clock: clk}, 10)
	require.NoError(t, err)
	th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk})
	require.NoError(t, err)
	ths, err := guard.NewThrottles(guard.ThrottleOptions{Clock: clk}, 10)
	require.NoError(t, err)

	rec := retrydebug.NewRecorder(0, 0)
	rec.Breaker("payments", single)
	rec.Breakers("per-host", keyed)
	rec.Throttle("search", th)
	rec.Throttles("per-host", ths)

	fail := func(p retry.Policy) {
		p.MaxAttempts, p.Clock = 1, clk
		_, _ = retry.Do(context.Background(), func(context.Context) error { return errDown }, p)
	}
	fail(retry.Policy{Breaker: single})
	_, _ = retry.Do(context.Background(), func(context.Context) error { return nil }, retry.Policy{Breaker: keyed.Get("https://a.example"), Clock: clk})
	fail(retry.Policy{Breaker: keyed.Get("https://b.example")})
	for range 50 {
		fail(retry.Policy{Throttle: th})
		fail(retry.Policy{Throttle: ths.Get("https://b.example")})
		_, _ = retry.Do(context.Background(), func(context.Context) error { return nil }, retry.Policy{Throttle: ths.Get("https://a.example"), Clock: clk})
	}

	s := rec.Snapshot()
	assert.Equal(t, []retrydebug.BreakerStatus{
		{Name: "payments", State: "open"},
		{Name: "per-host", Key: "https://b.example", State: "open"},
		{Name: "per-host", Key: "https://a.example", State: "closed"},
	}, s.Breakers)
	require.Len(t, s.Throttles, 3)
	assert.Equal(t, "search", s.Throttles[0].Name)
	assert.InDelta(t, th.RejectProbability(), s.Throttles[0].RejectRatio, 1e-9)
	assert.Greater(t, s.Throttles[0].RejectRatio, 0.5)
	assert.Equal(t, "https://b.example", s.Throttles[1].Key, "the key that sheds comes first")
	assert.Zero(t, s.Throttles[2].RejectRatio)

	clk.Add(time.Minute)
	assert.Equal(t, "half-open", rec.Snapshot().Breakers[0].State, "on time, with no call")

	_, body := get(t, rec, "/debug/retries")
	assert.Contains(t, body, "<h2>Circuit breakers</h2>")
	assert.Contains(t, body, `<tr class="half-open"><td class="name">payments</td><td class="name"></td><td class="name">half-open</td></tr>`)
	assert.Contains(t, body, "<td class=\"name\">https://b.example</td><td class=\"name\">half-open</td>")
	assert.Contains(t, body, "<h2>Adaptive throttles</h2>")
	assert.Contains(t, body, fmt.Sprintf("%.3f", th.RejectProbability()))

	_, js := get(t, rec, "/debug/retries?format=json")
	var decoded retrydebug.Snapshot
	require.NoError(t, json.Unmarshal([]byte(js), &decoded))
	assert.Len(t, decoded.Breakers, 3)
	assert.Len(t, decoded.Throttles, 3)

	rec.Breaker("payments", nil)
	rec.Throttles("per-host", nil)
	s = rec.Snapshot()
	assert.Len(t, s.Breakers, 2, "nil removes")
	assert.Len(t, s.Throttles, 1)
}

// A keyed set shows at most 100 keys, those in trouble first, and a
// Recorder keeps at most as many registrations as operations.
func TestRecorderGuardsAreBounded(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, Clock: clk}, 1000)
	require.NoError(t, err)
	for i := range 300 {
		bs.Get(fmt.Sprint("host", i))
	}
	_, _ = retry.Do(context.Background(), func(context.Context) error { return errDown },
		retry.Policy{MaxAttempts: 1, Breaker: bs.Get("host299"), Clock: clk})
	rec := retrydebug.NewRecorder(0, 2)
	rec.Breakers("hosts", bs)
	s := rec.Snapshot()
	require.Len(t, s.Breakers, 100)
	assert.Equal(t, retrydebug.BreakerStatus{Name: "hosts", Key: "host299", State: "open"}, s.Breakers[0])
	for i := range 5 {
		rec.Breaker(fmt.Sprint("b", i), new(guard.Breaker))
	}
	assert.Len(t, rec.Snapshot().Breakers, 101, "2 registrations at most")
}
