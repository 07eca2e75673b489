package retryotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

var errDown = errors.New("503")

// attrString is a set of attributes as "key=value" pairs, in order.
func attrString(s attribute.Set) string {
	out := ""
	for _, kv := range s.ToSlice() {
		if out != "" {
			out += ","
		}
		out += string(kv.Key) + "=" + kv.Value.String()
	}
	return out
}

// int64Points returns the points of the int64 gauge or sum name, by their
// attributes.
func int64Points(t *testing.T, s *sink, name string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	switch d := s.metrics(t)[name].(type) {
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out[attrString(p.Attributes)] = p.Value
		}
	case metricdata.Sum[int64]:
		require.True(t, d.IsMonotonic)
		for _, p := range d.DataPoints {
			out[attrString(p.Attributes)] = p.Value
		}
	case nil:
	default:
		t.Fatalf("%s is a %T", name, d)
	}
	return out
}

// The breaker state gauge follows a breaker, single and keyed, and reads
// half-open when OpenFor ends with no call; the transitions counter counts
// each change once, by the state moved to.
func TestObserveBreakers(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	clk := retrytest.NewClock()
	b, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, OpenFor: time.Minute, Probes: 1, Clock: clk})
	require.NoError(t, err)
	bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, OpenFor: time.Minute, Clock: clk}, 10)
	require.NoError(t, err)
	reg, err := s.obs.ObserveBreaker("payments", b)
	require.NoError(t, err)
	kreg, err := s.obs.ObserveBreakers("hosts", bs)
	require.NoError(t, err)

	do := func(br *guard.Breaker, op func(context.Context) error) {
		_, _ = retry.Do(context.Background(), op, retry.Policy{MaxAttempts: 1, Breaker: br, Clock: clk})
	}
	fail := func(context.Context) error { return errDown }
	do(b, fail)
	do(bs.Get("https://a.example"), fail)
	do(bs.Get("https://b.example"), func(context.Context) error { return nil })

	state := int64Points(t, s, retryotel.BreakerStateName)
	assert.Equal(t, map[string]int64{
		"retry.breaker.state=closed,retry.guard.name=payments":                                   0,
		"retry.breaker.state=open,retry.guard.name=payments":                                     1,
		"retry.breaker.state=half-open,retry.guard.name=payments":                                0,
		"retry.breaker.state=closed,retry.guard.key=https://a.example,retry.guard.name=hosts":    0,
		"retry.breaker.state=open,retry.guard.key=https://a.example,retry.guard.name=hosts":      1,
		"retry.breaker.state=half-open,retry.guard.key=https://a.example,retry.guard.name=hosts": 0,
		"retry.breaker.state=closed,retry.guard.key=https://b.example,retry.guard.name=hosts":    1,
		"retry.breaker.state=open,retry.guard.key=https://b.example,retry.guard.name=hosts":      0,
		"retry.breaker.state=half-open,retry.guard.key=https://b.example,retry.guard.name=hosts": 0,
	}, state)

	clk.Add(time.Minute)
	require.Eventually(t, func() bool {
		return int64Points(t, s, retryotel.BreakerStateName)["retry.breaker.state=half-open,retry.guard.name=payments"] == 1
	}, 10*time.Second, time.Millisecond, "half-open on time")
	do(b, func(context.Context) error { return nil })

	assert.Equal(t, map[string]int64{
		"retry.breaker.state=open,retry.guard.name=payments":                                     1,
		"retry.breaker.state=half-open,retry.guard.name=payments":                                1,
		"retry.breaker.state=closed,retry.guard.name=payments":                                   1,
		"retry.breaker.state=open,retry.guard.key=https://a.example,retry.guard.name=hosts":      1,
		"retry.breaker.state=half-open,retry.guard.key=https://a.example,retry.guard.name=hosts": 1,
	}, int64Points(t, s, retryotel.BreakerTransitionsName), "each change once")

	require.NoError(t, reg.Unregister())
	require.NoError(t, kreg.Unregister())
	assert.Empty(t, int64Points(t, s, retryotel.BreakerStateName))
}

// The reject ratio gauge follows each throttle; the transitions counter
// counts the start and the end of shedding once each.
func TestObserveThrottles(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	clk := retrytest.NewClock()
	ts, err := guard.NewThrottles(guard.ThrottleOptions{Window: time.Minute, Clock: clk}, 10)
	require.NoError(t, err)
	reg, err := s.obs.ObserveThrottles("hosts", ts)
	require.NoError(t, err)
	th := ts.Get("https://a.example")
	for range 100 {
		_, _ = retry.Do(context.Background(), func(context.Context) error { return errDown },
			retry.Policy{MaxAttempts: 1, Throttle: th, Clock: clk})
	}
	d, ok := s.metrics(t)[retryotel.ThrottleRejectRatioName].(metricdata.Gauge[float64])
	require.True(t, ok)
	require.Len(t, d.DataPoints, 1)
	assert.Equal(t, "retry.guard.key=https://a.example,retry.guard.name=hosts", attrString(d.DataPoints[0].Attributes))
	assert.InDelta(t, th.RejectProbability(), d.DataPoints[0].Value, 1e-9)
	assert.Greater(t, d.DataPoints[0].Value, 0.5)

	clk.Add(2 * time.Minute)
	_ = s.metrics(t) // a collection sees the throttle stop, with no call
	assert.Equal(t, map[string]int64{
		"retry.guard.key=https://a.example,retry.guard.name=hosts,retry.throttle.shedding=true":  1,
		"retry.guard.key=https://a.example,retry.guard.name=hosts,retry.throttle.shedding=false": 1,
	}, int64Points(t, s, retryotel.ThrottleTransitionsName))
	require.NoError(t, reg.Unregister())
}

func TestObserveGuardsRefuseBadInput(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	_, err := s.obs.ObserveBreaker("x", nil)
	assert.Error(t, err)
	_, err = s.obs.ObserveBreakers("x", nil)
	assert.Error(t, err)
	_, err = s.obs.ObserveThrottle("x", nil)
	assert.Error(t, err)
	_, err = s.obs.ObserveThrottles("x", nil)
	assert.Error(t, err)
	var zero retryotel.Observer
	_, err = zero.ObserveThrottle("x", new(guard.Throttle))
	assert.Error(t, err)
}
