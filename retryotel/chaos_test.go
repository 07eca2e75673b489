package retryotel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/retryotel"
)

// The switch's state and counts, read at each collection, by switch and
// fault name; after Unregister, nothing.
func TestObserveChaos(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	sw := chaos.NewSwitch(1)
	in := chaos.NewInjector(chaos.Fault{Switch: sw, Name: "slow", Rate: 0, Latency: 1}, chaos.Fault{Switch: sw, Rate: 1, Status: 503})
	reg, err := s.obs.ObserveChaos("game day", sw)
	require.NoError(t, err)

	type reading struct {
		on                 int64
		requests, injected map[string]int64
	}
	read := func() reading {
		t.Helper()
		m := s.metrics(t)
		r := reading{on: -1, requests: map[string]int64{}, injected: map[string]int64{}}
		if data, ok := m[retryotel.ChaosOnName]; ok {
			pts := data.(metricdata.Gauge[int64]).DataPoints
			require.Len(t, pts, 1)
			name, _ := pts[0].Attributes.Value(retryotel.ChaosSwitchKey)
			assert.Equal(t, "game day", name.AsString())
			r.on = pts[0].Value
		}
		for metric, into := range map[string]map[string]int64{retryotel.ChaosRequestsName: r.requests, retryotel.ChaosInjectedName: r.injected} {
			data, ok := m[metric]
			if !ok {
				continue
			}
			sum := data.(metricdata.Sum[int64])
			assert.True(t, sum.IsMonotonic, metric)
			for _, p := range sum.DataPoints {
				assert.Equal(t, 2, p.Attributes.Len(), "chaos.switch and chaos.fault only")
				f, _ := p.Attributes.Value(retryotel.ChaosFaultKey)
				into[f.AsString()] = p.Value
			}
		}
		return r
	}
	zero := map[string]int64{"503": 0, "slow": 0}
	assert.Equal(t, reading{on: 0, requests: zero, injected: zero}, read(), "off")

	sw.On()
	for range 3 {
		in.Decide(nil)
	}
	assert.Equal(t, reading{on: 1, requests: map[string]int64{"503": 3, "slow": 3}, injected: map[string]int64{"503": 3, "slow": 0}}, read())

	require.NoError(t, reg.Unregister())
	assert.Equal(t, reading{on: -1, requests: map[string]int64{}, injected: map[string]int64{}}, read())
}

func TestObserveChaosRefusesBadInput(t *testing.T) {
	t.Parallel()
	_, err := newSink(t).obs.ObserveChaos("x", nil)
	assert.ErrorContains(t, err, "needs a switch")
	var zero retryotel.Observer
	_, err = zero.ObserveChaos("x", chaos.NewSwitch(1))
	assert.ErrorContains(t, err, "no meter")
}
