package retry

import (
	"context"

	"github.com/stormguard/retry/guard"
)

// WithGuards returns p with each guard it lacks (Budget, Breaker,
// Throttle, Limiter) taken from k for key: an origin, a target, a kind of op. It
// is how every integration attaches keyed guards, so that a Policy's own
// guard always wins and every integration keys them alike.
func (p Policy) WithGuards(k *guard.Keyed, key string) Policy {
	if k == nil {
		return p
	}
	if p.Budget == nil && k.Budgets != nil {
		p.Budget = k.Budgets.Get(key)
	}
	if p.Breaker == nil && k.Breakers != nil {
		p.Breaker = k.Breakers.Get(key)
	}
	if p.Throttle == nil && k.Throttles != nil {
		p.Throttle = k.Throttles.Get(key)
	}
	if p.Limiter == nil && k.Limiters != nil {
		p.Limiter = k.Limiters.Get(key)
	}
	return p
}

// guarded reports whether p has a Throttle, a Breaker or a Limiter: such a
// call takes runGuarded, so that the others pay nothing for them, not
// even a defer (which would keep run's own from being open-coded).
func (p *Policy) guarded() bool { return p.Throttle != nil || p.Breaker != nil || p.Limiter != nil }

// runGuarded is run through the Policy's Throttle and Breaker. A closed
// breaker's call holds nothing that a panic could lose, and is told how it
// went when run returns, with no defer; a call that may take a half-open
// probe takes runProbing, which gives the probe back on a panic.
func (p *Policy) runGuarded(ctx context.Context, op func(context.Context) error, t *Trace) error {
	if p.Limiter != nil && slotHeld(ctx, p.Limiter) {
		// The attempt this call runs in holds a slot of it already.
		p.Limiter = nil
		if !p.guarded() {
			return p.run(ctx, op, t, nil)
		}
	}
	if outer := outerLoop(ctx); outer != nil && !p.RetryNested {
		// Nested: the outer loop admits and counts this attempt through
		// the guards it shares with this one. Asked again, a half-open
		// breaker would refuse the outer loop's own probe, and a closed
		// one count each failure twice.
		if outer.breaker == p.Breaker {
			p.Breaker = nil
		}
		if outer.throttle == p.Throttle {
			p.Throttle = nil
		}
		if !p.guarded() {
			return p.run(ctx, op, t, nil)
		}
	}
	var g guard.Call
	// A slot of the Limiter is held while op runs, so that a panic would
	// lose it: such a call defers Abandon, as one that may probe does.
	if p.Limiter != nil || !g.StartFast(p.Throttle, p.Breaker) {
		return p.runProbing(ctx, op, t, &g)
	}
	err := p.run(ctx, op, t, &g)
	if g.Restarting() {
		// The breaker left closed before the first attempt: nothing was
		// sent or counted, and the call starts again, holding its probe.
		*t = Trace{}
		return p.runProbing(ctx, op, t, &g)
	}
	g.End()
	return err
}

// runProbing is runGuarded for a call that may take a half-open probe, or
// holds a Limiter's slots.
func (p *Policy) runProbing(ctx context.Context, op func(context.Context) error, t *Trace, g *guard.Call) error {
	g.Start(p.Throttle, p.Breaker)
	g.Limit(p.Limiter)
	defer g.Abandon()
	err := p.run(ctx, op, t, g)
	g.End()
	return err
}

// refusalStop is why a call stops when a guard refused an attempt.
func refusalStop(r guard.Refusal) StopReason {
	switch r {
	case guard.RefusedByThrottle:
		return StopThrottled
	case guard.RefusedByLimiter:
		return StopLimited
	}
	return StopBreakerOpen
}
