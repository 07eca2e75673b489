package queue

import (
	"context"
	"log/slog"

	"github.com/stormguard/retry/guard"
)

// watcher is what Breaker, Breakers, Throttle and Throttles have in common.
type watcher interface {
	Watch(f func(guard.Change)) (stop func(), err error)
}

// watch has the Logger told of each change of state of the breakers and
// throttles the Publisher's calls go through: the Policy's own, or else
// every one of the Guards' sets (a Breakers' watchers hear its keys, those
// made later included).
func (p *Publisher) watch() error {
	var ws []watcher
	switch {
	case p.policy.Breaker != nil:
		ws = append(ws, p.policy.Breaker)
	case p.guards.Breakers != nil:
		ws = append(ws, p.guards.Breakers)
	}
	switch {
	case p.policy.Throttle != nil:
		ws = append(ws, p.policy.Throttle)
	case p.guards.Throttles != nil:
		ws = append(ws, p.guards.Throttles)
	}
	for _, w := range ws {
		stop, err := w.Watch(p.logChange)
		if err != nil {
			return err
		}
		p.stops = append(p.stops, stop)
	}
	return nil
}

// logChange logs one change. It runs in the call that made the change,
// under the guard's lock: it must be quick, and must not call the guard.
func (p *Publisher) logChange(c guard.Change) {
	ctx := context.Background() // a watcher gets no ctx: the change is no one call's
	if c.Breaker {
		level := slog.LevelInfo
		if c.To == guard.BreakerOpen {
			level = slog.LevelWarn
		}
		p.log.Log(ctx, level, "queue: breaker changed", "topic", c.Key, "from", c.From.String(), "to", c.To.String())
		return
	}
	level := slog.LevelInfo
	if c.Shedding {
		level = slog.LevelWarn
	}
	p.log.Log(ctx, level, "queue: throttle changed", "topic", c.Key, "shedding", c.Shedding)
}
