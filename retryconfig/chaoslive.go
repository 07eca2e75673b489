package retryconfig

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/stormguard/retry/chaos"
)

// ChaosTransport returns a [chaos.Transport] over base that injects the
// faults that the current Config declares for the policy name (see
// [Config.Chaos]), armed by sw: a reload that adds, changes or removes
// them reaches the next request, so that a game day is a config change on
// a running service, once the program has turned sw on. While sw is off
// it costs one atomic load per request.
func (l *Live) ChaosTransport(base http.RoundTripper, name string, sw *chaos.Switch) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &liveTransport{base: base, sw: sw, faults: liveFaults[http.RoundTripper]{live: l, name: name, sw: sw,
		build: func(fs []chaos.Fault) http.RoundTripper { return chaos.Transport(base, fs...) }}}
}

// ChaosHandler returns a [chaos.Handler] in front of next that injects
// the faults that the current Config declares for the policy name, armed
// by sw, as [Live.ChaosTransport] does on the client side.
func (l *Live) ChaosHandler(next http.Handler, name string, sw *chaos.Switch) http.Handler {
	return &liveHandler{next: next, sw: sw, faults: liveFaults[http.Handler]{live: l, name: name, sw: sw,
		build: func(fs []chaos.Fault) http.Handler { return chaos.Handler(next, fs...) }}}
}

type liveTransport struct {
	base   http.RoundTripper
	sw     *chaos.Switch
	faults liveFaults[http.RoundTripper]
}

func (t *liveTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.sw.Enabled() {
		return t.base.RoundTrip(req)
	}
	return t.faults.get().RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of the base, as
// http.Client.CloseIdleConnections expects of a RoundTripper.
func (t *liveTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type liveHandler struct {
	next   http.Handler
	sw     *chaos.Switch
	faults liveFaults[http.Handler]
}

func (h *liveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.sw.Enabled() {
		h.next.ServeHTTP(w, r)
		return
	}
	h.faults.get().ServeHTTP(w, r)
}

// liveFaults is the injector made from the faults of one policy name of
// the Config current in live, made anew when the Config changes.
type liveFaults[T any] struct {
	live  *Live
	name  string
	sw    *chaos.Switch
	build func([]chaos.Fault) T

	cur atomic.Pointer[builtFaults[T]]
	mu  sync.Mutex // one build per Config, so that injectors are made in one order
}

type builtFaults[T any] struct {
	cfg *Config
	v   T
}

func (lf *liveFaults[T]) get() T {
	cfg := lf.live.Config()
	if b := lf.cur.Load(); b != nil && b.cfg == cfg {
		return b.v
	}
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if b := lf.cur.Load(); b != nil && b.cfg == cfg {
		return b.v
	}
	b := &builtFaults[T]{cfg: cfg, v: lf.build(cfg.Chaos(lf.name, lf.sw))}
	lf.cur.Store(b)
	return b.v
}
