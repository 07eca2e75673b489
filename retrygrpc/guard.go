package retrygrpc

import (
	"github.com/stormguard/retry"
	"google.golang.org/grpc"
)

// WithBreakers gives each target (cc.Target(), such as
// "dns:///api.example.com:443") a retry.Breaker of its own, from bs, for a
// call whose Policy has none, so that a service that is down fails fast
// without failing the calls to the others [none: only Policy.Breaker]. A
// call the breaker refuses is not sent and fails with UNAVAILABLE and an
// error matching retry.ErrBreakerOpen. As with holds, the unit is the
// target, every backend behind it: the balancer picks one below the
// interceptor.
func WithBreakers(bs *retry.Breakers) Option {
	return Option{func(c *config) { c.breakers = bs }}
}

// WithThrottles gives each target a retry.Throttle of its own, from ts,
// for a call whose Policy has none, so that one service's overload sheds
// only the calls to it [none: only Policy.Throttle]. A call the throttle
// refuses is not sent and fails with UNAVAILABLE and an error matching
// retry.ErrThrottled.
func WithThrottles(ts *retry.Throttles) Option {
	return Option{func(c *config) { c.throttles = ts }}
}

// guards gives p the Breaker and Throttle of cc's target, unless it has its
// own.
func (cfg *config) guards(cc *grpc.ClientConn, p *retry.Policy) {
	if cfg.breakers == nil && cfg.throttles == nil {
		return
	}
	target := ""
	if cc != nil {
		target = cc.Target()
	}
	if p.Breaker == nil && cfg.breakers != nil {
		p.Breaker = cfg.breakers.Get(target)
	}
	if p.Throttle == nil && cfg.throttles != nil {
		p.Throttle = cfg.throttles.Get(target)
	}
}
