// Package retrytest helps test code that retries with package retry, without
// sleeping: scripted operations that fail as told and count their calls
// ([Script], [ScriptValue], [Always]), a fake clock that shows or skips
// each wait Do starts ([Clock]), a seeded Jitter ([Seeded]), and an
// in-process HTTP server for tests inside testing/synctest
// ([HandlerTransport]), with the network faults that decide whether a
// retried write runs twice ([FaultyHandlerTransport]).
//
// Four ways drive Do's waits without real time:
//   - set Policy.Clock to a Clock from [NewAutoClock]: each wait ends as it
//     starts, so a test calls retry.Do, or an HTTP client with a retrying
//     Transport, straight from its goroutine, one call at a time;
//   - call [Do], which does the same for one call, and lets calls made at
//     the same time share a Clock;
//   - make concurrent calls, or calls to a real server, each inside
//     [Clock.Run]: time moves once every call there waits, and a call stuck
//     on its server moves on to its deadline;
//   - set Policy.Clock to a Clock from [NewClock], receive from
//     [Clock.Waits] and call Add to step through the waits one by one, as
//     when a test cancels mid-wait.
//
// Or run the test inside testing/synctest and leave Policy.Clock nil: the
// bubble's fake time runs the real timers. A server on loopback cannot
// serve such a test (a goroutine waiting on the network is not idle in
// synctest's eyes, so fake time stands still and the test deadlocks): use
// HandlerTransport as the client's transport instead.
package retrytest

import (
	"context"
	"sync"
)

// Op is an operation for retry.Do that returns a scripted error on each
// call, then nil, and counts its calls. It is safe for concurrent use.
type Op struct {
	mu     sync.Mutex
	script []error
	always error
	calls  int
}

// Script returns an Op whose i-th call returns errs[i], and every later call
// nil: Script(e, e) fails twice, then succeeds.
func Script(errs ...error) *Op {
	return &Op{script: errs}
}

// Always returns an Op that fails with err on every call.
func Always(err error) *Op {
	return &Op{always: err}
}

// Call is the operation: pass o.Call to retry.Do.
func (o *Op) Call(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	if o.always != nil {
		return o.always
	}
	if o.calls <= len(o.script) {
		return o.script[o.calls-1]
	}
	return nil
}

// Calls returns how many times Call has run.
func (o *Op) Calls() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls
}

// ValueOp is an [Op] for retry.DoValue: it returns the zero T with each
// scripted error, then v.
type ValueOp[T any] struct {
	op Op
	v  T
}

// ScriptValue returns a ValueOp whose i-th call returns errs[i], and every
// later call v: ScriptValue(order, e, e) fails twice, then returns order.
func ScriptValue[T any](v T, errs ...error) *ValueOp[T] {
	return &ValueOp[T]{op: Op{script: errs}, v: v}
}

// Call is the operation: pass o.Call to retry.DoValue.
func (o *ValueOp[T]) Call(ctx context.Context) (T, error) {
	if err := o.op.Call(ctx); err != nil {
		var zero T
		return zero, err
	}
	return o.v, nil
}

// Calls returns how many times Call has run.
func (o *ValueOp[T]) Calls() int { return o.op.Calls() }
