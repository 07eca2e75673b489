package retryotel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retryotel"
)

// An outbox's ops as gauges: alert on outbox.oldest_pending, watch
// outbox.ops{outbox.state="failed"} for dead letters.
func ExampleObserver_ObserveOutbox() {
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meters.Shutdown(context.Background())
	obs, err := retryotel.New(retryotel.WithMeterProvider(meters))
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "outbox")
	defer os.RemoveAll(dir)
	j, err := outbox.OpenFile(filepath.Join(dir, "journal"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	o, err := outbox.New(j, outbox.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg, err := obs.ObserveOutbox("payments", o)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()
	o.Enqueue(context.Background(), outbox.Op{Kind: "charge", Payload: []byte("order 42")})

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	var lines []string // data points come in no set order
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if g, ok := m.Data.(metricdata.Gauge[int64]); ok {
			for _, p := range g.DataPoints {
				state, _ := p.Attributes.Value(retryotel.OutboxStateKey)
				lines = append(lines, fmt.Sprint(m.Name, " ", state.AsString(), " ", p.Value))
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// outbox.ops failed 0
	// outbox.ops pending 1
	// outbox.ops running 0
}
