package exactlyonce

import (
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// faults is the faulty network in front of the server: it answers some
// requests 503 before the handler, and runs the handler for others and
// then closes the connection without an answer, as a proxy or a network
// that loses a response would.
type faults struct {
	cfg  Config
	next http.Handler

	mu  sync.Mutex
	rnd *rand.Rand

	arrived, refused, dropped, replays atomic.Int64
	open                               atomic.Int64 // connections not yet closed or hijacked

	outageOnce sync.Once
	outage     sync.WaitGroup
}

// startOutage takes the store down for cfg.Outage, once.
func (f *faults) startOutage() {
	f.outageOnce.Do(func() {
		f.cfg.Down(true)
		f.outage.Go(func() {
			time.Sleep(f.cfg.Outage)
			f.cfg.Down(false)
		})
	})
}

func (f *faults) track(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		f.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		f.open.Add(-1)
	}
}

func (f *faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n := f.arrived.Add(1); f.cfg.Outage > 0 && n >= int64(f.cfg.Requests/3) {
		f.startOutage()
	}
	f.mu.Lock()
	u := f.rnd.Float64()
	f.mu.Unlock()
	switch {
	case u < f.cfg.Refuse:
		f.refused.Add(1)
		http.Error(w, "injected fault", http.StatusServiceUnavailable)
	case u < f.cfg.Refuse+f.cfg.Drop:
		f.dropped.Add(1)
		rec := httptest.NewRecorder()
		f.next.ServeHTTP(rec, r)
		f.countReplay(rec.Header())
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err) // net/http closes the connection: the drop happens anyway
		}
		conn.Close()
	default:
		f.next.ServeHTTP(&replayCounter{ResponseWriter: w, f: f}, r)
	}
}

func (f *faults) countReplay(h http.Header) {
	if h.Get("Idempotent-Replayed") == "true" {
		f.replays.Add(1)
	}
}

// replayCounter counts the replays that go out.
type replayCounter struct {
	http.ResponseWriter
	f *faults
}

func (c *replayCounter) WriteHeader(code int) {
	c.f.countReplay(c.Header())
	c.ResponseWriter.WriteHeader(code)
}
