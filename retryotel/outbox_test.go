package retryotel_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormguard/retry/internal/outboxfix"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retryotel"
)

// The seam: an Outbox running real ops over a file journal, and the gauges
// read, at each collection, the numbers its Stats has: one op in a call,
// one dead letter, one pending, the oldest two minutes old; no key,
// payload or error text in any attribute. After Unregister, nothing.
func TestObserveOutbox(t *testing.T) {
	t.Parallel()
	fx := outboxfix.Start(t, secret)
	o, clk := fx.Outbox, fx.Clock

	s := newSink(t)
	reg, err := s.obs.ObserveOutbox("payments", o)
	require.NoError(t, err)
	type gauges struct {
		ops    map[string]int64
		oldest float64
	}
	read := func() gauges {
		t.Helper()
		m := s.metrics(t)
		g := gauges{ops: map[string]int64{}}
		if data, ok := m[retryotel.OutboxOpsName]; ok {
			for _, p := range data.(metricdata.Gauge[int64]).DataPoints {
				name, _ := p.Attributes.Value(retryotel.OutboxNameKey)
				assert.Equal(t, "payments", name.AsString())
				assert.Equal(t, 2, p.Attributes.Len(), "outbox.name and outbox.state only")
				state, _ := p.Attributes.Value(retryotel.OutboxStateKey)
				g.ops[state.AsString()] = p.Value
			}
		}
		if data, ok := m[retryotel.OutboxOldestPendingName]; ok {
			pts := data.(metricdata.Gauge[float64]).DataPoints
			require.Len(t, pts, 1)
			assert.Equal(t, 1, pts[0].Attributes.Len(), "outbox.name only")
			g.oldest = pts[0].Value
		}
		return g
	}
	assert.Equal(t, gauges{ops: map[string]int64{"pending": 0, "running": 0, "failed": 0}}, read(), "an empty outbox")

	fx.Fill(t)
	assert.Equal(t, gauges{ops: map[string]int64{"pending": 1, "running": 1, "failed": 1}, oldest: 120}, read())

	fx.Release()
	require.Eventually(t, func() bool { return o.Stats().Running == 0 }, 10*time.Second, time.Millisecond)
	clk.Add(time.Minute)
	assert.Equal(t, gauges{ops: map[string]int64{"pending": 1, "running": 0, "failed": 1}, oldest: 180}, read(), "read at each collection")

	require.NoError(t, reg.Unregister())
	assert.Equal(t, gauges{ops: map[string]int64{}}, read())
}

func TestObserveOutboxRefusesBadInput(t *testing.T) {
	t.Parallel()
	_, err := newSink(t).obs.ObserveOutbox("x", nil)
	require.Error(t, err)
	var zero retryotel.Observer
	j, err := outbox.OpenFile(filepath.Join(t.TempDir(), "journal"))
	require.NoError(t, err)
	defer j.Close()
	o, err := outbox.New(j, outbox.Options{})
	require.NoError(t, err)
	_, err = zero.ObserveOutbox("x", o)
	require.Error(t, err)
}
