package retryotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/stormguard/retry/chaos"
)

// The metrics of a chaos switch (see [Observer.ObserveChaos]).
const (
	// ChaosOnName is a gauge of whether a chaos switch is on: 1 while it
	// arms its faults, 0 otherwise. Alert on it, so that a game day is not
	// left running.
	ChaosOnName = "chaos.on"
	// ChaosRequestsName counts, per fault, the requests drawn for while
	// the switch was on.
	ChaosRequestsName = "chaos.requests"
	// ChaosInjectedName counts, per fault, the faults injected.
	ChaosInjectedName = "chaos.injected"
)

// The attributes of the chaos metrics.
const (
	// ChaosSwitchKey is the name given to [Observer.ObserveChaos].
	ChaosSwitchKey = attribute.Key("chaos.switch")
	// ChaosFaultKey is a fault's name (chaos.Fault.Name, or the one made
	// from its fields, such as "503"); a switch counts at most 100 names.
	ChaosFaultKey = attribute.Key("chaos.fault")
)

// ObserveChaos reports sw, read from sw.Stats at each collection, as the
// gauge chaos.on, by chaos.switch, and the counters chaos.requests and
// chaos.injected, by chaos.switch and chaos.fault:
//
//	reg, err := obs.ObserveChaos("game day", sw)
//	defer reg.Unregister()
//
// Compare chaos.injected with the retry metrics of the same calls to see
// what the retries made of the faults. Unregister the returned
// Registration when the switch goes away. A nil switch is an error, and so
// is the zero Observer, which has no meter.
func (o *Observer) ObserveChaos(name string, sw *chaos.Switch) (metric.Registration, error) {
	if sw == nil {
		return nil, errors.New("retryotel: ObserveChaos needs a switch")
	}
	if o == nil || o.meter == nil {
		return nil, errNoMeter
	}
	on, err := o.meter.Int64ObservableGauge(ChaosOnName, metric.WithUnit("1"),
		metric.WithDescription("Whether the chaos switch arms its faults: 1 for on, 0 for off."))
	if err != nil {
		return nil, err
	}
	requests, err := o.meter.Int64ObservableCounter(ChaosRequestsName, metric.WithUnit("{request}"),
		metric.WithDescription("Requests drawn for a fault while its chaos switch was on."))
	if err != nil {
		return nil, err
	}
	injected, err := o.meter.Int64ObservableCounter(ChaosInjectedName, metric.WithUnit("{fault}"),
		metric.WithDescription("Faults injected on purpose."))
	if err != nil {
		return nil, err
	}
	byName := metric.WithAttributeSet(attribute.NewSet(ChaosSwitchKey.String(name)))
	return o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		st := sw.Stats()
		v := int64(0)
		if st.On {
			v = 1
		}
		obs.ObserveInt64(on, v, byName)
		for _, f := range st.Faults {
			attrs := metric.WithAttributeSet(attribute.NewSet(ChaosSwitchKey.String(name), ChaosFaultKey.String(f.Name)))
			obs.ObserveInt64(requests, int64(f.Requests), attrs)
			obs.ObserveInt64(injected, int64(f.Injected), attrs)
		}
		return nil
	}, on, requests, injected)
}
