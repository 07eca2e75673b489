package retrydebug

import (
	"slices"
	"strconv"
	"time"

	"github.com/stormguard/retry/shed"
)

// maxShedLimiters bounds the Limiters a Recorder shows; a service has a
// few, one per server or per class of work.
const maxShedLimiters = 32

// ShedLimiter makes the page, and its JSON, show the state of a server's
// load shedder under name: its limit, the requests in flight and queued,
// and how many it admitted and shed since it was made, read from l.Stats
// each time they are served:
//
//	rec.ShedLimiter("api", limiter)
//
// Registering a name again replaces its Limiter; a nil l removes it. A
// Recorder shows at most 32 Limiters; further names are ignored.
func (r *Recorder) ShedLimiter(name string, l *shed.Limiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	setNamed(&r.shedders, name, l, l == nil, maxShedLimiters)
}

// ShedStatus is the state of a Limiter registered with
// [Recorder.ShedLimiter]: shed.Stats under its name.
type ShedStatus struct {
	Name string `json:"name"`
	// Limit is the limit on requests in flight now; InFlight and Queued
	// the requests admitted and not yet done, and those waiting for a
	// slot.
	Limit    int `json:"limit"`
	InFlight int `json:"in_flight"`
	Queued   int `json:"queued"`
	// Admitted and Shed count the requests since the Limiter was made;
	// QueueTimeouts those of Shed that waited their whole QueueTimeout.
	Admitted      uint64 `json:"admitted"`
	Shed          uint64 `json:"shed"`
	QueueTimeouts uint64 `json:"queue_timeouts"`
	// Latency is the recent latency of the work admitted, and MinLatency
	// the baseline an adaptive limit compares it with.
	Latency    time.Duration `json:"latency_ns"`
	MinLatency time.Duration `json:"min_latency_ns"`
}

// shedStatuses reads the registered Limiters, in the order registered.
func (r *Recorder) shedStatuses() []ShedStatus {
	r.mu.RLock()
	list := slices.Clone(r.shedders)
	r.mu.RUnlock()
	out := make([]ShedStatus, 0, len(list))
	for _, n := range list {
		s := n.v.Stats()
		out = append(out, ShedStatus{
			Name: n.name, Limit: s.Limit, InFlight: s.InFlight, Queued: s.Queued,
			Admitted: s.Admitted, Shed: s.Shed, QueueTimeouts: s.QueueTimeouts,
			Latency: s.Latency, MinLatency: s.MinLatency,
		})
	}
	return out
}

// shedRow is a Limiter's line on the page.
type shedRow struct {
	ShedStatus
	ShedShare           string // of the requests seen, the share shed
	Latency, MinLatency string
}

func newShedRows(ss []ShedStatus) []shedRow {
	rows := make([]shedRow, 0, len(ss))
	for _, s := range ss {
		share := "0%"
		if seen := s.Admitted + s.Shed; seen > 0 && s.Shed > 0 {
			share = strconv.FormatFloat(100*float64(s.Shed)/float64(seen), 'f', 1, 64) + "%"
		}
		rows = append(rows, shedRow{ShedStatus: s, ShedShare: share, Latency: human(s.Latency), MinLatency: human(s.MinLatency)})
	}
	return rows
}
