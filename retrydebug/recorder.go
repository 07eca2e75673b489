package retrydebug

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/shed"
)

// Defaults of the zero Recorder.
const (
	defaultCalls      = 50
	defaultOperations = 100
)

// otherName is the name the overflow bucket is shown under.
const otherName = "(other operations)"

// Recorder keeps, for each operation name, the last calls and running
// totals: calls, attempts, retries per call, calls by stop reason (those
// that gave up among them) and elapsed-time percentiles, plus the tokens of
// the Budgets registered with [Recorder.Budget]. It is an [http.Handler]
// that shows them (see [Recorder.ServeHTTP]).
//
// Its memory is bounded whatever the traffic: each operation keeps a ring
// of its last calls (a call is about 250 bytes, and never holds an error)
// and a fixed histogram of 2 KiB, and the number of operations is capped;
// once the cap is reached, calls of further names are counted together in
// one overflow bucket, "(other operations)", whose recent calls show their
// own names.
//
// Name operations by what they do ("inventory.get", "GET /users/{id}"),
// never by a raw path or a URL, whose ids and query values would make names
// unbounded and may be secret.
//
// Elapsed times are those of the Trace: the whole call, its first attempt
// included, since Do reads the clock at the start of a call that an OnDone
// observes (see retry.Attempt.Start).
//
// The zero Recorder is ready to use, as NewRecorder(50, 100). A Recorder is
// safe for concurrent use; recording a call takes one short lock of its
// operation and allocates nothing.
type Recorder struct {
	maxCalls, maxOps int // zero means the default; set only by NewRecorder

	mu      sync.RWMutex
	byName  map[string]*operation
	byHTTP  map[httpKey]*operation // Summaries already resolved, so that naming one allocates nothing
	other   *operation
	budgets []namedBudget
	guards  guardSet // breakers and throttles: see storm.go

	configVersion func() uint64 // see ConfigVersion

	byRoute    map[string]*idemRoute // idempotency routes, capped as operations are
	otherRoute *idemRoute

	outboxes []named[*outbox.Outbox] // see Outbox
	shedders []named[*shed.Limiter]  // see ShedLimiter
	switches []named[*chaos.Switch]  // see Chaos
}

// httpKey is what a request's operation name is made of, so that a
// Summary is looked up without building its name.
type httpKey struct{ route, method, origin string }

type namedBudget struct {
	name   string
	budget *guard.Budget  // alone, or
	set    *guard.Budgets // a line per key
}

// NewRecorder returns a Recorder that keeps the last calls calls of each
// operation, for at most operations names before the overflow bucket. A
// value of 0 or less means the default: 50 calls, 100 operations.
func NewRecorder(calls, operations int) *Recorder {
	return &Recorder{maxCalls: max(calls, 0), maxOps: max(operations, 0)}
}

func (r *Recorder) limits() (calls, ops int) {
	calls, ops = r.maxCalls, r.maxOps
	if calls == 0 {
		calls = defaultCalls
	}
	if ops == 0 {
		ops = defaultOperations
	}
	return calls, ops
}

// OnDone returns a hook for [retry.Policy.OnDone] that records each call
// under name:
//
//	p.OnDone = rec.OnDone("inventory.get")
//
// The name is looked up once, here, so that the hook only records.
//
// OnDone is for retry.Do (and retry.Hedge). Do not also set it as the Policy
// of a retryhttp.Transport whose OnDone is [Recorder.RecordHTTP]: both see
// the same request, which would be counted twice, under two names.
func (r *Recorder) OnDone(name string) func(ctx context.Context, t retry.Trace, err error) {
	op := r.operation(name)
	return func(_ context.Context, t retry.Trace, _ error) {
		op.record(name, &t, answer{}, time.Now())
	}
}

// RecordHTTP records a request that a [retryhttp.Transport] has finished,
// under the route given with retryhttp.WithRoute, or else its method and
// origin ("GET https://api.example"; a method that the HTTP semantic
// conventions do not know reads as "HTTP"). It has the type of
// [retryhttp.Transport.OnDone]:
//
//	transport.OnDone = rec.RecordHTTP
//
// Only the name, the status and the Trace are kept: never the error, a
// header, a path or a query.
func (r *Recorder) RecordHTTP(_ context.Context, s retryhttp.Summary) {
	k := httpKey{route: s.Route}
	if s.Route == "" {
		k.method, k.origin = httpMethod(s.Method), s.Origin
	}
	r.mu.RLock()
	op := r.byHTTP[k]
	r.mu.RUnlock()
	if op == nil {
		name := httpName(&s)
		op = r.operation(name)
		if op.other { // not cached: the overflow bucket's names are unbounded
			op.record(name, &s.Trace, answer{status: s.Status}, time.Now())
			return
		}
		r.mu.Lock()
		if r.byHTTP == nil {
			r.byHTTP = make(map[httpKey]*operation)
		}
		r.byHTTP[k] = op // at most two keys per named operation: bounded
		r.mu.Unlock()
	}
	op.record(op.name, &s.Trace, answer{status: s.Status}, time.Now())
}

// Record records a call that ended with Trace t under name, for code that
// has a Trace in hand rather than a hook.
func (r *Recorder) Record(name string, t retry.Trace) {
	r.operation(name).record(name, &t, answer{}, time.Now())
}

// Budget registers b under name, so that the page shows its tokens: a
// Budget that refuses retries has fewer than half left. Registering a name
// again replaces its Budget, and registering it with nil removes it. At most
// as many Budgets as operations are kept, and names past that are ignored,
// so that a Budget registered per request cannot grow the Recorder. A Budget
// taken from a guard.Budgets may later be forgotten by it; register the
// Budgets of fixed keys only.
func (r *Recorder) Budget(name string, b *guard.Budget) {
	_, maxOps := r.limits()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.budgets {
		if r.budgets[i].name == name {
			if b == nil {
				r.budgets = slices.Delete(r.budgets, i, i+1)
			} else {
				r.budgets[i] = namedBudget{name: name, budget: b}
			}
			return
		}
	}
	if b != nil && len(r.budgets) < maxOps {
		r.budgets = append(r.budgets, namedBudget{name: name, budget: b})
	}
}

// operation returns the operation of name, made on first use, or the
// overflow bucket once the cap is reached.
func (r *Recorder) operation(name string) *operation {
	r.mu.RLock()
	op, full := r.byName[name], r.other != nil
	other := r.other
	r.mu.RUnlock()
	switch {
	case op != nil:
		return op
	case full:
		return other
	}

	calls, maxOps := r.limits()
	r.mu.Lock()
	defer r.mu.Unlock()
	if op := r.byName[name]; op != nil {
		return op
	}
	if len(r.byName) >= maxOps {
		if r.other == nil {
			r.other = newOperation(otherName, true, calls)
		}
		return r.other
	}
	if r.byName == nil {
		r.byName = make(map[string]*operation)
	}
	op = newOperation(name, false, calls)
	r.byName[name] = op
	return op
}
