package loadgen

import (
	"context"
	"fmt"
	"time"

	"github.com/stormguard/retry/shed"
)

// The proof's shape: how many clients, the server's slots, the overload.
const (
	// Clients is the number of clients of the overloaded run. Each calls
	// again as soon as a call is over, so that together they would offer
	// 10 times the server's 20 slots; but a client that is shed waits its
	// Retry-After (1 s at least) before its retry, as clients of this
	// module do, and the load they offer settles near what the server can
	// serve plus what it sheds. Report.Offered says how much.
	Clients = 200
	// Overload is the load, in capacities, that the transport must be
	// able to carry on this machine with room to spare (see headroom).
	Overload = 3
	// MinWork is the work of a request when the machine can carry it.
	MinWork = 5 * time.Millisecond
	// headroom is how many times its capacity the server's transport must
	// be able to carry, at least: offering Overload times the capacity
	// then takes a small share of the machine, so that the Limiter, not
	// the CPU the clients share with the server (and with whatever else
	// runs), decides what is served.
	headroom = 20
	// maxWork bounds the work, so that the runs hold enough requests.
	maxWork = 150 * time.Millisecond
)

// Stack is a server under test and its clients.
type Stack struct {
	// Server is the work behind the Limiter; its handler must answer at
	// once while Server.Raw is on.
	Server *Server
	// Start makes the Limiter the handler admits through, once the work of
	// a request is known; Prove calls it once, before any request reaches
	// the Limiter.
	Start func(work time.Duration) *shed.Limiter
	// Rec records the attempts of Call.
	Rec *Recorder
	// Call makes one call of client i and returns when it is over,
	// retries included. The overloaded run's clients are 0 to Clients-1;
	// those of the runs at capacity come after, so that none is held back
	// by what another run's server said.
	Call func(ctx context.Context, client int)

	// Twin is a server like Server with no Limiter, that TwinCall calls
	// and TwinRec records: its unloaded latency, measured while Server is
	// overloaded, is the reference of the overloaded p99, so that the
	// machine's own noise (other processes, the race detector) weighs on
	// both alike.
	Twin     *Server
	TwinRec  *Recorder
	TwinCall func(ctx context.Context, client int)
}

// Report is what Prove measured.
type Report struct {
	// Raw is what the transport alone carried, with no work.
	Raw Result
	// Work is the work of a request: MinWork, or more when the machine
	// (the race detector, other load) carries less than headroom times
	// the server's capacity at MinWork.
	Work time.Duration
	// Before and After are runs of one client per slot, before and after
	// the overloaded run; the capacity is the mean of their goodputs.
	Before, After Result
	// Loaded is the run of Clients clients offered Overload times the
	// capacity, and Unloaded the twin's, at the same time, with a quarter
	// as many clients as it has slots.
	Loaded, Unloaded Result
	// Stats is the Limiter's, at the end.
	Stats shed.Stats
}

// String says what the report measured, for t.Log.
func (r Report) String() string {
	return fmt.Sprintf("raw %.0f/s; work %v; capacity %.0f/s (%.0f before, %.0f after); "+
		"overloaded: offered %.0f/s = %.2f of capacity, served %.0f/s = %.2f of capacity, %d refused, p50 %v, p99 %v = %.2f× the unloaded twin's p99 %v",
		r.Raw.Goodput, r.Work, r.Capacity(), r.Before.Goodput, r.After.Goodput,
		r.Loaded.Offered, r.Loaded.Offered/r.Capacity(), r.Loaded.Goodput, r.GoodputRatio(), r.Loaded.Refused,
		r.Loaded.P50, r.Loaded.P99, r.P99Ratio(), r.Unloaded.P99) +
		fmt.Sprintf("; limiter: limit %d, admitted %d, shed %d (%d queue timeouts)", r.Stats.Limit, r.Stats.Admitted, r.Stats.Shed, r.Stats.QueueTimeouts)
}

// Capacity is the mean goodput of the runs before and after.
func (r Report) Capacity() float64 { return (r.Before.Goodput + r.After.Goodput) / 2 }

// GoodputRatio is the loaded run's goodput over the capacity.
func (r Report) GoodputRatio() float64 { return r.Loaded.Goodput / r.Capacity() }

// P99Ratio is the loaded run's p99 over the unloaded twin's.
func (r Report) P99Ratio() float64 { return float64(r.Loaded.P99) / float64(r.Unloaded.P99) }

// Prove runs the calibration and the overloaded run, in about 7.5 s.
func Prove(ctx context.Context, s Stack) Report {
	var r Report
	slots := s.Server.Slots()
	s.Server.SetRaw(true)
	// Every client of the overloaded run calls first, so that their
	// connections are open before it: a storm of 200 dials on a busy
	// machine would be what that run measured.
	Run(ctx, s.Rec, Clients, 0, 0, 300*time.Millisecond, s.Call)
	r.Raw = Run(ctx, s.Rec, 2*slots, 0, 100*time.Millisecond, 500*time.Millisecond, s.Call)
	s.Server.SetRaw(false)
	// Capacity slots/work at most Raw/headroom.
	r.Work = max(MinWork, time.Duration(headroom*float64(slots)/max(r.Raw.Goodput, 1)*float64(time.Second)))
	r.Work = min(r.Work, maxWork).Round(time.Millisecond)
	s.Server.SetWork(r.Work)
	s.Twin.SetWork(r.Work)
	l := s.Start(r.Work)
	s.Server.Watch(func() int { return l.Stats().Limit })

	spare := func(ctx context.Context, i int) { s.Call(ctx, Clients+i) }
	r.Before = Run(ctx, s.Rec, slots, 0, 200*time.Millisecond, time.Second, spare)
	twin := make(chan Result, 1)
	go func() {
		twin <- Run(ctx, s.TwinRec, max(1, slots/4), 0, 1500*time.Millisecond, 4500*time.Millisecond, s.TwinCall)
	}()
	r.Loaded = Run(ctx, s.Rec, Clients, 0, 1500*time.Millisecond, 4500*time.Millisecond, s.Call)
	r.Unloaded = <-twin
	r.After = Run(ctx, s.Rec, slots, 0, 200*time.Millisecond, time.Second, spare)
	r.Stats = l.Stats()
	return r
}
