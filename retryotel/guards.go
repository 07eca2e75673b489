package retryotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"

	"github.com/stormguard/retry/guard"
)

// BudgetTokensName is a gauge of the tokens left in each budget of a
// guard.Budgets observed with [Observer.ObserveGuards], by GuardKeyKey,
// read at each collection: one that holds half its bucket or less refuses
// retries.
const BudgetTokensName = "retry.budget.tokens"

// ObserveGuards observes every set of k under name: the one call for the
// guards an integration takes through a guard.Keyed (retryhttp's
// Transport.Guards, retrygrpc.WithGuards, outbox.Options.Guards). Its
// Breakers and Throttles are observed as [Observer.ObserveBreakers] and
// [Observer.ObserveThrottles] observe them, and its Budgets as the gauge
// BudgetTokensName. Unregister the Registration to stop all of them. A
// Keyed with no set is an error.
func (o *Observer) ObserveGuards(name string, k guard.Keyed) (metric.Registration, error) {
	if k.Budgets == nil && k.Breakers == nil && k.Throttles == nil {
		return nil, errors.New("retryotel: ObserveGuards needs a guard.Keyed with a set")
	}
	regs := &registrations{}
	fail := func(err error) (metric.Registration, error) {
		_ = regs.Unregister()
		return nil, err
	}
	if k.Budgets != nil {
		reg, err := o.observeBudgets(name, k.Budgets)
		if err != nil {
			return fail(err)
		}
		regs.list = append(regs.list, reg)
	}
	if k.Breakers != nil {
		reg, err := o.ObserveBreakers(name, k.Breakers)
		if err != nil {
			return fail(err)
		}
		regs.list = append(regs.list, reg)
	}
	if k.Throttles != nil {
		reg, err := o.ObserveThrottles(name, k.Throttles)
		if err != nil {
			return fail(err)
		}
		regs.list = append(regs.list, reg)
	}
	return regs, nil
}

func (o *Observer) observeBudgets(name string, bs *guard.Budgets) (metric.Registration, error) {
	if o == nil || o.meter == nil {
		return nil, errNoMeter
	}
	g, err := o.meter.Float64ObservableGauge(BudgetTokensName, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens left in a retry budget (gRFC A6): at half its size or less, it refuses retries."))
	if err != nil {
		return nil, err
	}
	return o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		for key, b := range bs.All() {
			obs.ObserveFloat64(g, b.Tokens(), metric.WithAttributeSet(guardAttrs(name, key)))
		}
		return nil
	}, g)
}

// registrations are several Registrations undone as one.
type registrations struct {
	embedded.Registration
	list []metric.Registration
}

func (rs *registrations) Unregister() error {
	var errs []error
	for _, r := range rs.list {
		errs = append(errs, r.Unregister())
	}
	return errors.Join(errs...)
}
