package retryotel

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/stormguard/retry"
)

// The attribute keys. A call's metrics carry these two and no other, so
// that their cardinality is (operations + 1) × outcomes.
const (
	// OperationKey names the operation: the name given to
	// [Observer.OnDone], or a request's route or method (see
	// [Observer.RecordHTTP]). Names past the Observer's cap read as
	// "_OTHER", as the OpenTelemetry semantic conventions spell a value
	// outside a bounded set.
	OperationKey = attribute.Key("retry.operation")
	// OutcomeKey says how the call ended: one of the values below.
	OutcomeKey = attribute.Key("retry.outcome")
)

// otherOperation is the operation of the calls past the cap.
const otherOperation = "_OTHER"

// outcomes are the values of OutcomeKey, by retry.StopReason. Each stop
// reason has its own, so that a dashboard can tell a call that ran out of
// attempts from one the budget or the deadline cut short.
var outcomes = [...]string{
	retry.StopNone:         "unknown",
	retry.StopSuccess:      "ok",
	retry.StopNotRetryable: "not_retried",
	retry.StopExhausted:    "attempts_exhausted",
	retry.StopDeadline:     "deadline",
	retry.StopBudget:       "budget_exhausted",
	retry.StopContextDone:  "context_done",
	retry.StopDeferred:     "deferred",
	retry.StopInvalid:      "invalid",
	retry.StopPanicked:     "panicked",
	retry.StopThrottled:    "throttled",
	retry.StopBreakerOpen:  "breaker_open",
	retry.StopStale:        "stale",
	retry.StopLimited:      "limited",
}

// outcomeOf returns the index in outcomes of s; a reason this package does
// not know reads as "unknown".
func outcomeOf(s retry.StopReason) int {
	if int(s) < len(outcomes) {
		return int(s)
	}
	return int(retry.StopNone)
}
