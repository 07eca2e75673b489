package retrydebug

import (
	"slices"
	"time"

	"github.com/stormguard/retry/outbox"
)

// maxOutboxes bounds the outboxes a Recorder shows; a service has a few.
const maxOutboxes = 32

// Outbox makes the page, and its JSON, show o's ops under name: how many
// are pending, running and failed (dead letters), and the age of the
// oldest one not finished, read from o.Stats each time they are served
// (a few counters, never the journal):
//
//	rec.Outbox("payments", o)
//
// Registering a name again replaces its outbox; a nil o removes it. A
// Recorder shows at most 32 outboxes; further names are ignored. The page
// shows no key, kind or payload.
func (r *Recorder) Outbox(name string, o *outbox.Outbox) {
	r.mu.Lock()
	defer r.mu.Unlock()
	setNamed(&r.outboxes, name, o, o == nil, maxOutboxes)
}

// OutboxOps is the state of an outbox registered with [Recorder.Outbox].
type OutboxOps struct {
	Name    string `json:"name"`
	Pending int    `json:"pending"` // waiting for their next attempt
	Running int    `json:"running"` // in an attempt now
	Failed  int    `json:"failed"`  // dead letters, held until re-driven
	// OldestPending is the age of the oldest op not finished.
	OldestPending time.Duration `json:"oldest_pending_ns"`
}

// outboxOps reads the registered outboxes, in the order registered.
func (r *Recorder) outboxOps() []OutboxOps {
	r.mu.RLock()
	obs := slices.Clone(r.outboxes)
	r.mu.RUnlock()
	out := make([]OutboxOps, 0, len(obs))
	for _, n := range obs {
		s := n.v.Stats()
		out = append(out, OutboxOps{Name: n.name, Pending: s.Pending, Running: s.Running, Failed: s.Failed, OldestPending: s.OldestPending})
	}
	return out
}

// outboxRow is an outbox's line on the page.
type outboxRow struct {
	Name                     string
	Pending, Running, Failed int
	Oldest                   string
}

func newOutboxRows(obs []OutboxOps) []outboxRow {
	rows := make([]outboxRow, 0, len(obs))
	for _, o := range obs {
		rows = append(rows, outboxRow{Name: o.Name, Pending: o.Pending, Running: o.Running, Failed: o.Failed, Oldest: human(o.OldestPending)})
	}
	return rows
}
