package retryotel_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormguard/retry/internal/shedfix"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/shed"
)

// shedPoints reads the shed metrics: each gauge's value, and the counter's
// by outcome, checking that every point is named "api".
func shedPoints(t *testing.T, s *sink) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for name, data := range s.metrics(t) {
		var pts []metricdata.DataPoint[int64]
		switch d := data.(type) {
		case metricdata.Gauge[int64]:
			pts = d.DataPoints
		case metricdata.Sum[int64]:
			require.True(t, d.IsMonotonic, name)
			require.Equal(t, metricdata.CumulativeTemporality, d.Temporality, name)
			pts = d.DataPoints
		default:
			continue
		}
		for _, p := range pts {
			v, _ := p.Attributes.Value(retryotel.ShedNameKey)
			assert.Equal(t, "api", v.AsString(), name)
			key := name
			if o, ok := p.Attributes.Value(retryotel.ShedOutcomeKey); ok {
				key += "{" + o.AsString() + "}"
			}
			out[key] = p.Value
		}
	}
	return out
}

// The gauges and the counter read, at each collection, what the Limiter's
// Stats say: its limit, what is in flight and queued, what it admitted
// and shed. After Unregister, nothing.
func TestObserveShedLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, release := shedfix.Busy(t)
		s := newSink(t)
		reg, err := s.obs.ObserveShedLimiter("api", l)
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{
			"shed.limit": 2, "shed.in_flight": 2, "shed.queued": 1,
			"shed.requests{admitted}": 2, "shed.requests{shed}": 1,
		}, shedPoints(t, s))

		release()
		assert.Equal(t, map[string]int64{
			"shed.limit": 2, "shed.in_flight": 0, "shed.queued": 0,
			"shed.requests{admitted}": 3, "shed.requests{shed}": 1,
		}, shedPoints(t, s), "read at each collection")

		require.NoError(t, reg.Unregister())
		assert.Empty(t, shedPoints(t, s))
	})
}

func TestObserveShedLimiterRefusesBadInput(t *testing.T) {
	t.Parallel()
	_, err := newSink(t).obs.ObserveShedLimiter("x", nil)
	require.Error(t, err)
	l, err := shed.New(shed.Options{})
	require.NoError(t, err)
	var zero retryotel.Observer
	_, err = zero.ObserveShedLimiter("x", l)
	require.Error(t, err)
}
