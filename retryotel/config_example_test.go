package retryotel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retryotel"
)

// A service that reloads its retry policies reports the version in force,
// so that a dashboard shows when a pushed change was taken.
func ExampleObserver_ObserveConfigVersion() {
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meters.Shutdown(context.Background())
	obs, err := retryotel.New(retryotel.WithMeterProvider(meters))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := retryconfig.Parse([]byte(`{"policies": {"default": {"maxAttempts": 3}}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	live := retryconfig.NewLive(cfg)
	reg, err := obs.ObserveConfigVersion(live.Version)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()

	// On SIGHUP, or when the file changes:
	if err := live.Update([]byte(`{"policies": {"default": {"maxAttempts": 2}}}`)); err != nil {
		fmt.Println("rejected, keeping version", live.Version())
	}

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if g, ok := m.Data.(metricdata.Gauge[int64]); ok {
			fmt.Println(m.Name, g.DataPoints[0].Value)
		}
	}
	// Output: retry.config.version 2
}
