package retryotel_test

import (
	"testing"

	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retryotel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The gauge follows a live configuration: each collection reads the
// version then in force, an accepted update moves it and a rejected one
// does not; after Unregister it is no longer reported.
func TestObserveConfigVersion(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	cfg, err := retryconfig.Parse([]byte(`{"policies": {"default": {"maxAttempts": 3}}}`))
	require.NoError(t, err)
	live := retryconfig.NewLive(cfg)

	reg, err := s.obs.ObserveConfigVersion(live.Version)
	require.NoError(t, err)
	gauge := func() []int64 {
		t.Helper()
		data, ok := s.metrics(t)[retryotel.ConfigVersionName]
		if !ok {
			return nil
		}
		g, ok := data.(metricdata.Gauge[int64])
		require.True(t, ok, "%s is a gauge, not %T", retryotel.ConfigVersionName, data)
		var out []int64
		for _, p := range g.DataPoints {
			assert.Zero(t, p.Attributes.Len(), "no attribute")
			out = append(out, p.Value)
		}
		return out
	}
	assert.Equal(t, []int64{1}, gauge())
	require.NoError(t, live.Update([]byte(`{"policies": {"default": {"maxAttempts": 2}}}`)))
	require.Error(t, live.Update([]byte(`{"policies": {"default": {"maxAttempts": "x"}}}`)))
	assert.Equal(t, []int64{2}, gauge(), "the accepted update counts, the rejected one does not")

	require.NoError(t, reg.Unregister())
	assert.Empty(t, gauge())
}

func TestObserveConfigVersionRefusesBadInput(t *testing.T) {
	t.Parallel()
	_, err := newSink(t).obs.ObserveConfigVersion(nil)
	require.Error(t, err)
	var zero retryotel.Observer
	_, err = zero.ObserveConfigVersion(func() uint64 { return 1 })
	require.Error(t, err)
}
