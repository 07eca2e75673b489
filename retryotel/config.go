package retryotel

import (
	"context"
	"errors"
	"math"

	"go.opentelemetry.io/otel/metric"
)

// ConfigVersionName is a gauge of the version of the retry configuration in
// force (see [Observer.ObserveConfigVersion]): a dashboard that shows it
// next to the retry metrics tells whether a pushed change was taken, and
// when.
const ConfigVersionName = "retry.config.version"

// ObserveConfigVersion reports version, read at each collection, as the
// gauge retry.config.version, with no attribute:
//
//	reg, err := obs.ObserveConfigVersion(live.Version) // a *retryconfig.Live
//	defer reg.Unregister()
//
// Unregister the returned Registration when the configuration goes away. A
// nil version is an error, and so is the zero Observer, which has no meter.
func (o *Observer) ObserveConfigVersion(version func() uint64) (metric.Registration, error) {
	if version == nil {
		return nil, errors.New("retryotel: ObserveConfigVersion needs a version func")
	}
	if o == nil || o.meter == nil {
		return nil, errors.New("retryotel: the zero Observer has no meter: make one with New")
	}
	g, err := o.meter.Int64ObservableGauge(ConfigVersionName, metric.WithUnit("{version}"),
		metric.WithDescription("Version of the retry configuration in force: the number of updates accepted, the first config included."))
	if err != nil {
		return nil, err
	}
	return o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		obs.ObserveInt64(g, int64(min(version(), math.MaxInt64)))
		return nil
	}, g)
}
