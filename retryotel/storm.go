package retryotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/stormguard/retry/guard"
)

// The metrics of breakers and throttles (see [Observer.ObserveBreaker] and
// [Observer.ObserveThrottle]).
const (
	// BreakerStateName is a gauge with one point per state of each
	// breaker, by BreakerStateKey: 1 for the state it is in, 0 for the
	// others, as the OpenTelemetry conventions report a state (hw.status).
	// It is read at each collection: a breaker whose OpenFor has passed
	// reads half-open then, whether or not a call has come.
	BreakerStateName = "retry.breaker.state"
	// BreakerTransitionsName counts each breaker's changes of state, by
	// the state it moved to (BreakerStateKey).
	BreakerTransitionsName = "retry.breaker.transitions"
	// ThrottleRejectRatioName is a gauge of each throttle's reject
	// probability, read at each collection: 0 for a healthy service.
	ThrottleRejectRatioName = "retry.throttle.reject_ratio"
	// ThrottleTransitionsName counts the times each throttle started
	// (ThrottleSheddingKey true) and stopped (false) shedding.
	ThrottleTransitionsName = "retry.throttle.transitions"
)

// The attributes of the breaker and throttle metrics.
const (
	// GuardNameKey is the name a breaker or throttle was observed under.
	GuardNameKey = attribute.Key("retry.guard.name")
	// GuardKeyKey is the key (an origin, a target) of a breaker or
	// throttle of a guard.Breakers or guard.Throttles; absent for one
	// observed alone. There are as many as the set holds keys at most.
	GuardKeyKey = attribute.Key("retry.guard.key")
	// BreakerStateKey is "closed", "open" or "half-open".
	BreakerStateKey = attribute.Key("retry.breaker.state")
	// ThrottleSheddingKey says whether the throttle started shedding.
	ThrottleSheddingKey = attribute.Key("retry.throttle.shedding")
)

var breakerStates = [...]guard.BreakerState{guard.BreakerClosed, guard.BreakerOpen, guard.BreakerHalfOpen}

// ObserveBreaker reports b's state, read at each collection, as the gauge
// retry.breaker.state, and counts its changes of state in
// retry.breaker.transitions, under name:
//
//	reg, err := obs.ObserveBreaker("payments", breaker)
//	defer reg.Unregister()
//
// Unregister the returned Registration when the breaker goes away. A nil
// breaker is an error, and so is the zero Observer, which has no meter.
func (o *Observer) ObserveBreaker(name string, b *guard.Breaker) (metric.Registration, error) {
	if b == nil {
		return nil, errors.New("retryotel: ObserveBreaker needs a Breaker")
	}
	return o.observeBreakers(name, b, func(yield func(string, *guard.Breaker) bool) { yield("", b) })
}

// ObserveBreakers is [Observer.ObserveBreaker] for each key of bs, with
// the key as retry.guard.key.
func (o *Observer) ObserveBreakers(name string, bs *guard.Breakers) (metric.Registration, error) {
	if bs == nil {
		return nil, errors.New("retryotel: ObserveBreakers needs a Breakers")
	}
	return o.observeBreakers(name, bs, bs.All())
}

// ObserveThrottle reports t's reject probability, read at each
// collection, as the gauge retry.throttle.reject_ratio, and counts the
// times it starts and stops shedding in retry.throttle.transitions, under
// name. Unregister the returned Registration when the throttle goes away.
func (o *Observer) ObserveThrottle(name string, t *guard.Throttle) (metric.Registration, error) {
	if t == nil {
		return nil, errors.New("retryotel: ObserveThrottle needs a Throttle")
	}
	return o.observeThrottles(name, t, func(yield func(string, *guard.Throttle) bool) { yield("", t) })
}

// ObserveThrottles is [Observer.ObserveThrottle] for each key of ts, with
// the key as retry.guard.key.
func (o *Observer) ObserveThrottles(name string, ts *guard.Throttles) (metric.Registration, error) {
	if ts == nil {
		return nil, errors.New("retryotel: ObserveThrottles needs a Throttles")
	}
	return o.observeThrottles(name, ts, ts.All())
}

var errNoMeter = errors.New("retryotel: the zero Observer has no meter: make one with New")

// guardAttrs are the attributes of a breaker or throttle: its name, and
// its key if it has one.
func guardAttrs(name, key string, more ...attribute.KeyValue) attribute.Set {
	kv := append(make([]attribute.KeyValue, 0, 2+len(more)), GuardNameKey.String(name))
	if key != "" {
		kv = append(kv, GuardKeyKey.String(key))
	}
	return attribute.NewSet(append(kv, more...)...)
}

func (o *Observer) observeBreakers(name string, target watchable, all func(func(string, *guard.Breaker) bool)) (metric.Registration, error) {
	if o == nil || o.meter == nil {
		return nil, errNoMeter
	}
	g, err := o.meter.Int64ObservableGauge(BreakerStateName, metric.WithUnit("{state}"),
		metric.WithDescription("State of a circuit breaker: 1 for the state it is in, 0 for the others."))
	if err != nil {
		return nil, err
	}
	transitions, err := o.meter.Int64Counter(BreakerTransitionsName, metric.WithUnit("{transition}"),
		metric.WithDescription("Changes of state of a circuit breaker, by the state it moved to."))
	if err != nil {
		return nil, err
	}
	reg, err := o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		for key, b := range all {
			now := b.State() // makes the move to half-open, on time
			for _, s := range breakerStates {
				v := int64(0)
				if s == now {
					v = 1
				}
				obs.ObserveInt64(g, v, metric.WithAttributeSet(guardAttrs(name, key, BreakerStateKey.String(s.String()))))
			}
		}
		return nil
	}, g)
	if err != nil {
		return nil, err
	}
	return o.watch(target, reg, func(c guard.Change) {
		if c.Breaker {
			to := c.To.String()
			transitions.Add(context.Background(), 1, metric.WithAttributeSet(guardAttrs(name, c.Key, BreakerStateKey.String(to))))
		}
	})
}

func (o *Observer) observeThrottles(name string, target watchable, all func(func(string, *guard.Throttle) bool)) (metric.Registration, error) {
	if o == nil || o.meter == nil {
		return nil, errNoMeter
	}
	g, err := o.meter.Float64ObservableGauge(ThrottleRejectRatioName, metric.WithUnit("1"),
		metric.WithDescription("Probability with which an adaptive throttle refuses an attempt."))
	if err != nil {
		return nil, err
	}
	transitions, err := o.meter.Int64Counter(ThrottleTransitionsName, metric.WithUnit("{transition}"),
		metric.WithDescription("Times an adaptive throttle started or stopped shedding."))
	if err != nil {
		return nil, err
	}
	reg, err := o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		for key, t := range all {
			obs.ObserveFloat64(g, t.RejectProbability(), metric.WithAttributeSet(guardAttrs(name, key)))
		}
		return nil
	}, g)
	if err != nil {
		return nil, err
	}
	return o.watch(target, reg, func(c guard.Change) {
		if !c.Breaker {
			transitions.Add(context.Background(), 1, metric.WithAttributeSet(guardAttrs(name, c.Key, ThrottleSheddingKey.Bool(c.Shedding))))
		}
	})
}

// watchable is a guard whose changes can be watched.
type watchable interface {
	Watch(func(guard.Change)) (stop func(), err error)
}

// watch has f told of target's changes until the returned Registration,
// which also unregisters reg, is unregistered. A guard that has all the
// watchers it may have (guard.MaxWatchers) fails the observation.
func (o *Observer) watch(target watchable, reg metric.Registration, f func(guard.Change)) (metric.Registration, error) {
	stop, err := target.Watch(f)
	if err != nil {
		_ = reg.Unregister()
		return nil, err
	}
	return &guardRegistration{Registration: reg, stop: stop}, nil
}

// guardRegistration is the Registration of an observed breaker or
// throttle: its callback, and its watcher.
type guardRegistration struct {
	metric.Registration
	stop func()
}

func (r *guardRegistration) Unregister() error {
	r.stop()
	return r.Registration.Unregister()
}
