package retryotel_test

import (
	"context"
	"fmt"
	"slices"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/retryotel"
)

// A game day's switch as metrics: alert on chaos.on, and set
// chaos.injected beside the retries it caused.
func ExampleObserver_ObserveChaos() {
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meters.Shutdown(context.Background())
	obs, err := retryotel.New(retryotel.WithMeterProvider(meters))
	if err != nil {
		fmt.Println(err)
		return
	}
	sw := chaos.NewSwitch(42)
	reg, err := obs.ObserveChaos("game day", sw)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()
	in := chaos.NewInjector(chaos.Fault{Switch: sw, Rate: 1, Status: 503})
	sw.On()
	in.Decide(nil)

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	var lines []string // metrics come in no set order
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Gauge[int64]:
			lines = append(lines, fmt.Sprint(m.Name, " ", d.DataPoints[0].Value))
		case metricdata.Sum[int64]:
			f, _ := d.DataPoints[0].Attributes.Value(retryotel.ChaosFaultKey)
			lines = append(lines, fmt.Sprint(m.Name, " ", f.AsString(), " ", d.DataPoints[0].Value))
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// chaos.injected 503 1
	// chaos.on 1
	// chaos.requests 503 1
}
