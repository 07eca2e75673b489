package retrydebug

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/stormguard/retry"
)

// Snapshot is what a [Recorder] holds at one moment: the page shows it, and
// ?format=json returns it as JSON. Durations are in nanoseconds there.
type Snapshot struct {
	// Operations, by name, with the overflow bucket, if any, last.
	Operations []Operation `json:"operations"`
	// Budgets, in the order they were registered.
	Budgets []BudgetTokens `json:"budgets"`
	// Breakers are the states of the breakers registered with
	// [Recorder.Breaker] and [Recorder.Breakers], in the order they were
	// registered; a Breakers has a line per key. Left out of the JSON
	// when none is registered.
	Breakers []BreakerStatus `json:"breakers,omitempty"`
	// Throttles are the reject ratios of the throttles registered with
	// [Recorder.Throttle] and [Recorder.Throttles], likewise.
	Throttles []ThrottleStatus `json:"throttles,omitempty"`
	// Idempotency has the keyed requests of the routes recorded with
	// [Recorder.RecordIdempotency], by route, with the overflow bucket,
	// if any, last.
	Idempotency []IdempotencyRoute `json:"idempotency"`
	// ConfigVersion is the version of the retry configuration in force,
	// when one is registered with [Recorder.ConfigVersion]; 0 otherwise.
	ConfigVersion uint64 `json:"config_version,omitempty"`
	// Outboxes has the ops of the outboxes registered with
	// [Recorder.Outbox], in the order registered.
	Outboxes []OutboxOps `json:"outboxes,omitempty"`
}

// Operation is the record of one operation name.
type Operation struct {
	Name string `json:"name"`
	// Other is true for the overflow bucket, which counts the calls of
	// every name past the Recorder's cap.
	Other    bool  `json:"other"`
	Calls    int64 `json:"calls"`
	Attempts int64 `json:"attempts"`
	// Retries is the sum of each call's retries, its attempts after the
	// first. A call that made no attempt (its ctx had ended before Do
	// began) adds none, so Retries is never negative.
	Retries int64 `json:"retries"`
	// RetriesPerCall[i] counts the calls that made i retries; the last
	// element counts those that made that many or more.
	RetriesPerCall []int64 `json:"retries_per_call"`
	// Stops counts the calls by why they stopped, under the texts of
	// retry.StopReason: "ok", "not retried", "attempts exhausted", …
	Stops map[string]int64 `json:"stops"`
	// GaveUp counts the calls that gave up on an error they would have
	// retried: attempts, time or the retry budget ran out (the calls whose
	// error matches retry.ErrGaveUp).
	GaveUp int64 `json:"gave_up"`
	// Elapsed has percentiles of the calls' Trace.Elapsed, within 6.25%.
	Elapsed Percentiles `json:"elapsed_ns"`
	// Recent has the last calls, newest first.
	Recent []Call `json:"recent"`
}

// Percentiles of a duration.
type Percentiles struct {
	P50 time.Duration `json:"p50"`
	P95 time.Duration `json:"p95"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
}

// Call is one recorded call. It holds no error text, header, path or
// query: only numbers and the fixed texts of the Trace.
type Call struct {
	Time time.Time `json:"time"` // when it was recorded
	// Name is the operation's name; in the overflow bucket, the call's own.
	Name     string          `json:"name"`
	Attempts int             `json:"attempts"`
	Waits    []time.Duration `json:"waits_ns"` // the waits before attempts 2, 3, …: at most 16
	// WaitsTruncated says that the call waited more times than Waits holds.
	WaitsTruncated bool          `json:"waits_truncated"`
	Elapsed        time.Duration `json:"elapsed_ns"`
	Stop           string        `json:"stop"`             // retry.StopReason's text: "ok", "attempts exhausted", …
	GaveUp         bool          `json:"gave_up"`          // as for Operation.GaveUp
	Status         int           `json:"status,omitempty"` // the HTTP status, for a retryhttp request that got a response
	// GRPCCode is the gRPC status code's name, for a call recorded with
	// [Recorder.RecordGRPC]: "OK", "UNAVAILABLE", …
	GRPCCode string `json:"grpc_code,omitempty"`
	// Reason is the last attempt's retry.Attempt.Reason: a short, fixed
	// text such as "503 Service Unavailable", never an error's message.
	Reason string `json:"reason,omitempty"`
}

// BudgetTokens is the state of a Budget registered with [Recorder.Budget].
type BudgetTokens struct {
	Name string `json:"name"`
	Key  string `json:"key,omitempty"` // its key in a guard.Budgets

	Tokens float64 `json:"tokens"`
}

// gaveUp reports whether s is one of the reasons retry.ErrGaveUp matches.
func gaveUp(s retry.StopReason) bool {
	return s == retry.StopExhausted || s == retry.StopDeadline || s == retry.StopBudget ||
		s == retry.StopThrottled || s == retry.StopBreakerOpen || s == retry.StopLimited
}

// Snapshot returns a copy of what r holds now.
func (r *Recorder) Snapshot() Snapshot {
	ops := r.operations()
	s := Snapshot{Operations: make([]Operation, 0, len(ops)), Budgets: r.budgetTokens(), Idempotency: r.idempotencyRoutes()}
	s.ConfigVersion, _ = r.configVersionNow()
	s.Outboxes = r.outboxOps()
	s.Breakers, s.Throttles = r.breakerStatuses(), r.throttleStatuses()
	for _, op := range ops {
		s.Operations = append(s.Operations, op.snapshot(true))
	}
	return s
}

// operations returns r's operations by name, the overflow bucket last.
func (r *Recorder) operations() []*operation {
	r.mu.RLock()
	ops := make([]*operation, 0, len(r.byName)+1)
	for _, op := range r.byName {
		ops = append(ops, op)
	}
	other := r.other
	r.mu.RUnlock()
	slices.SortFunc(ops, func(a, b *operation) int { return strings.Compare(a.name, b.name) })
	if other != nil {
		ops = append(ops, other)
	}
	return ops
}

// lookup returns the operation of name, or the overflow bucket, or nil if
// there is none such.
func (r *Recorder) lookup(name string, other bool) *operation {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if other {
		return r.other
	}
	return r.byName[name]
}

// budgetTokens reads the registered Budgets.
func (r *Recorder) budgetTokens() []BudgetTokens {
	r.mu.RLock()
	budgets := slices.Clone(r.budgets)
	r.mu.RUnlock()
	out := make([]BudgetTokens, 0, len(budgets))
	for _, b := range budgets {
		if b.set == nil {
			out = append(out, BudgetTokens{Name: b.name, Tokens: b.budget.Tokens()})
			continue
		}
		var keyed []BudgetTokens
		for key, kb := range b.set.All() {
			keyed = append(keyed, BudgetTokens{Name: b.name, Key: key, Tokens: kb.Tokens()})
		}
		// The emptiest buckets first: those that refuse retries.
		slices.SortStableFunc(keyed, func(a, b BudgetTokens) int { return cmp.Compare(a.Tokens, b.Tokens) })
		out = append(out, keyed[:min(len(keyed), maxGuardKeys)]...)
	}
	return out
}

// snapshot copies the operation under its lock, and its recent calls if
// withCalls.
func (o *operation) snapshot(withCalls bool) Operation {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := Operation{
		Name:           o.name,
		Other:          o.other,
		Calls:          int64(o.calls),
		Attempts:       int64(o.attempts),
		Retries:        int64(o.retried),
		RetriesPerCall: make([]int64, retryBuckets),
		Stops:          make(map[string]int64),
		Elapsed:        o.elapsed.percentiles(),
		Recent:         []Call{},
	}
	for i, n := range o.retries {
		s.RetriesPerCall[i] = int64(n)
	}
	for stop, n := range o.stops {
		if n == 0 {
			continue
		}
		s.Stops[retry.StopReason(stop).String()] = int64(n)
		if gaveUp(retry.StopReason(stop)) {
			s.GaveUp += int64(n)
		}
	}
	if !withCalls {
		return s
	}
	s.Recent = make([]Call, 0, min(o.calls, uint64(len(o.ring))))
	for i := range cap(s.Recent) {
		r := &o.ring[(o.next-1-i+2*len(o.ring))%len(o.ring)]
		s.Recent = append(s.Recent, Call{
			Time:           r.at,
			Name:           r.name,
			Attempts:       r.attempts,
			Waits:          slices.Clone(r.waits[:r.nwaits]),
			WaitsTruncated: r.truncated,
			Elapsed:        r.elapsed,
			Stop:           r.stop.String(),
			GaveUp:         gaveUp(r.stop),
			Status:         r.answer.status,
			GRPCCode:       r.answer.grpcCode(),
			Reason:         r.reason,
		})
	}
	return s
}
