package retrygrpc

import (
	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"google.golang.org/grpc"
)

// WithGuards gives each target (cc.Target(), such as
// "dns:///api.example.com:443") a Budget, a Breaker, a Throttle and a
// Limiter of its own, from k's sets, for a call whose Policy has none, so
// that a service that is down fails fast, or one that is overloaded sheds,
// without touching the calls to the others [none: only the Policy's own].
// k.Holds, if set, keeps the holds (see [WithoutHold]), shared with
// whatever else is given it. A call the breaker refuses is not sent and
// fails with UNAVAILABLE and an error matching retry.ErrBreakerOpen; one
// the throttle refuses, retry.ErrThrottled; one the limiter refuses (as
// many calls to the target in flight as it allows, and no slot free in
// time), retry.ErrLimited. As with holds, the unit is the target, every
// backend behind it: the balancer picks one below the interceptor. These
// are the words retryhttp.Transport.Guards and outbox.Options.Guards use
// too.
func WithGuards(k guard.Keyed) Option {
	return Option{func(c *config) { c.guards = k }}
}

// guardPolicy gives p the guards of cc's target, unless it has its own.
func (cfg *config) guardPolicy(cc *grpc.ClientConn, p *retry.Policy) {
	if cfg.guards.Budgets == nil && cfg.guards.Breakers == nil && cfg.guards.Throttles == nil && cfg.guards.Limiters == nil {
		return
	}
	target := ""
	if cc != nil {
		target = cc.Target()
	}
	*p = p.WithGuards(&cfg.guards, target)
}
