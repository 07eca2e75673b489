package retryotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/stormguard/retry/shed"
)

// The metrics of a server's load shedder (see [Observer.ObserveShedLimiter]).
const (
	// ShedLimitName is a gauge of a Limiter's limit on requests in flight.
	ShedLimitName = "shed.limit"
	// ShedInFlightName is a gauge of the requests a Limiter admitted and
	// that are not done.
	ShedInFlightName = "shed.in_flight"
	// ShedQueuedName is a gauge of the requests waiting for a slot.
	ShedQueuedName = "shed.queued"
	// ShedRequestsName counts the requests a Limiter decided, by
	// ShedOutcomeKey: "admitted" (at once or from the queue) or "shed".
	ShedRequestsName = "shed.requests"
)

// The attributes of the shed metrics.
const (
	// ShedNameKey is the name given to [Observer.ObserveShedLimiter].
	ShedNameKey = attribute.Key("shed.name")
	// ShedOutcomeKey is a request's outcome: "admitted" or "shed".
	ShedOutcomeKey = attribute.Key("shed.outcome")
)

// ObserveShedLimiter reports l's state, read from l.Stats at each
// collection, under name: the gauges shed.limit, shed.in_flight and
// shed.queued, and the counter shed.requests by shed.outcome ("admitted",
// "shed"), all by shed.name:
//
//	reg, err := obs.ObserveShedLimiter("api", limiter)
//	defer reg.Unregister()
//
// The share shed is rate(shed.requests{shed.outcome="shed"}) over the
// rate of both; a limit that stays at its MinLimit while requests are shed
// says the work itself is slow, not the load high. Name a Limiter by the
// server or class of work it guards: its name is an attribute, so it must
// be one of a few. Unregister the returned Registration when the Limiter
// goes away. A nil Limiter is an error, and so is the zero Observer, which
// has no meter.
func (o *Observer) ObserveShedLimiter(name string, l *shed.Limiter) (metric.Registration, error) {
	if l == nil {
		return nil, errors.New("retryotel: ObserveShedLimiter needs a Limiter")
	}
	if o == nil || o.meter == nil {
		return nil, errNoMeter
	}
	limit, err := o.meter.Int64ObservableGauge(ShedLimitName, metric.WithUnit("{request}"),
		metric.WithDescription("Limit of a load shedder on the requests in flight."))
	if err != nil {
		return nil, err
	}
	inflight, err := o.meter.Int64ObservableGauge(ShedInFlightName, metric.WithUnit("{request}"),
		metric.WithDescription("Requests a load shedder admitted that are not done."))
	if err != nil {
		return nil, err
	}
	queued, err := o.meter.Int64ObservableGauge(ShedQueuedName, metric.WithUnit("{request}"),
		metric.WithDescription("Requests waiting for a load shedder's slot."))
	if err != nil {
		return nil, err
	}
	requests, err := o.meter.Int64ObservableCounter(ShedRequestsName, metric.WithUnit("{request}"),
		metric.WithDescription("Requests a load shedder decided, by outcome: admitted or shed."))
	if err != nil {
		return nil, err
	}
	byName := metric.WithAttributeSet(attribute.NewSet(ShedNameKey.String(name)))
	outcome := func(s string) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(ShedNameKey.String(name), ShedOutcomeKey.String(s)))
	}
	admitted, shedOut := outcome("admitted"), outcome("shed")
	return o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		s := l.Stats()
		obs.ObserveInt64(limit, int64(s.Limit), byName)
		obs.ObserveInt64(inflight, int64(s.InFlight), byName)
		obs.ObserveInt64(queued, int64(s.Queued), byName)
		obs.ObserveInt64(requests, int64(s.Admitted), admitted)
		obs.ObserveInt64(requests, int64(s.Shed), shedOut)
		return nil
	}, limit, inflight, queued, requests)
}
