package retryotel_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryotel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// ObserveBreakers exports the state of each key's breaker and counts its
// changes of state.
func ExampleObserver_ObserveBreakers() {
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meters.Shutdown(context.Background())
	obs, err := retryotel.New(retryotel.WithMeterProvider(meters))
	if err != nil {
		fmt.Println(err)
		return
	}
	breakers, _ := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1}, 100)
	reg, err := obs.ObserveBreakers("hosts", breakers)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()

	_, _ = retry.Do(context.Background(), func(context.Context) error { return errors.New("503") },
		retry.Policy{MaxAttempts: 1, Breaker: breakers.Get("https://api.example")})

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Gauge[int64]:
			for _, p := range d.DataPoints {
				if p.Value == 1 {
					state, _ := p.Attributes.Value(retryotel.BreakerStateKey)
					fmt.Println(m.Name, state.AsString())
				}
			}
		case metricdata.Sum[int64]:
			if m.Name == retryotel.BreakerTransitionsName {
				fmt.Println(m.Name, d.DataPoints[0].Value)
			}
		}
	}
	// Unordered output:
	// retry.breaker.state open
	// retry.breaker.transitions 1
}
