package retryotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/stormguard/retry/outbox"
)

// The gauges of an outbox (see [Observer.ObserveOutbox]).
const (
	// OutboxOpsName is a gauge of an outbox's ops, by state: "pending"
	// (waiting for an attempt), "running" (in one), "failed" (dead
	// letters, held until re-driven).
	OutboxOpsName = "outbox.ops"
	// OutboxOldestPendingName is a gauge, in seconds, of the age of an
	// outbox's oldest op not finished: the one to alert on, since it
	// grows while a downstream is down or no Run runs.
	OutboxOldestPendingName = "outbox.oldest_pending"
)

// The attributes of the outbox gauges.
const (
	// OutboxNameKey is the name given to [Observer.ObserveOutbox].
	OutboxNameKey = attribute.Key("outbox.name")
	// OutboxStateKey is an op's state: "pending", "running" or "failed".
	OutboxStateKey = attribute.Key("outbox.state")
)

// ObserveOutbox reports ob's ops, read from ob.Stats at each collection (a
// few counters, never the journal), as the gauges outbox.ops, by
// outbox.name and outbox.state, and outbox.oldest_pending, by outbox.name:
//
//	reg, err := obs.ObserveOutbox("payments", o)
//	defer reg.Unregister()
//
// Name an outbox by what it carries, as you would an operation: its name
// is an attribute, so it must be one of a few. Unregister the returned
// Registration when the outbox goes away. A nil outbox is an error, and so
// is the zero Observer, which has no meter.
func (o *Observer) ObserveOutbox(name string, ob *outbox.Outbox) (metric.Registration, error) {
	if ob == nil {
		return nil, errors.New("retryotel: ObserveOutbox needs an outbox")
	}
	if o == nil || o.meter == nil {
		return nil, errors.New("retryotel: the zero Observer has no meter: make one with New")
	}
	ops, err := o.meter.Int64ObservableGauge(OutboxOpsName, metric.WithUnit("{op}"),
		metric.WithDescription("Ops of the outbox, by state: pending, running, or failed (dead letters)."))
	if err != nil {
		return nil, err
	}
	oldest, err := o.meter.Float64ObservableGauge(OutboxOldestPendingName, metric.WithUnit("s"),
		metric.WithDescription("Age, since it was enqueued, of the outbox's oldest op not finished; 0 when none."))
	if err != nil {
		return nil, err
	}
	named := attribute.NewSet(OutboxNameKey.String(name))
	state := func(s string) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(OutboxNameKey.String(name), OutboxStateKey.String(s)))
	}
	pending, running, failed := state("pending"), state("running"), state("failed")
	byName := metric.WithAttributeSet(named)
	return o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		s := ob.Stats()
		obs.ObserveInt64(ops, int64(s.Pending), pending)
		obs.ObserveInt64(ops, int64(s.Running), running)
		obs.ObserveInt64(ops, int64(s.Failed), failed)
		obs.ObserveFloat64(oldest, s.OldestPending.Seconds(), byName)
		return nil
	}, ops, oldest)
}
