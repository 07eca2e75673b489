package outbox

import (
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryconfig"
)

// Options configure an [Outbox]. The zero Options are ready to use.
type Options struct {
	// Policy decides the attempts with Do's own rule (retry.Policy.Next):
	// its MaxAttempts (calls across every process, a negative value for no
	// count limit), its backoff and Jitter for the time of the next
	// attempt (a Retry-After comes on top, and does not feed the Jitter),
	// its Classifier, and its AttemptTimeout for each handler call. Its
	// Budget, Breaker, Throttle and Limiter are asked before each attempt; a
	// refusal is a wait, never an attempt (see Guards). MaxElapsed, OnRetry
	// and OnDone are not used: an op's NotAfter bounds it.
	Policy retry.Policy

	// Policies, if set, takes the place of Policy: each attempt takes the
	// policy named by its op's Kind (else "default") from the Config
	// current when the attempt starts, so that a reload reaches the ops
	// already pending, with the retryableStatusCodes the Config lists for
	// it (see HTTPHandler) [none]. The Config's breakers, throttles and
	// budgets apply as the Policy's own do.
	Policies *retryconfig.Live

	// Guards gives each kind of op (Op.Kind) a Budget, a Breaker, a
	// Throttle and a Limiter of its own from its sets, for a Policy
	// without one, and
	// Guards.Holds, if set, holds a kind back after an answer that asked
	// for a wait (a Retry-After, a retry.RetryAfter error), at most a
	// minute, until the next answer of that kind that is not a failure
	// [none]. A
	// refusal by any guard (the Policy's, these, or one below the handler:
	// a retryhttp.Transport's breaker, throttle, limiter or hold) reschedules the op
	// for when the guard may admit it, after a jittered backoff (a breaker
	// until it half-opens, a hold until it ends), counts no attempt, and
	// never dead-letters it; NotAfter still ends it.
	Guards guard.Keyed

	// Clock is the time source [Policy.Clock, or the real clock].
	Clock retry.Clock

	// Horizon is how long after Enqueue an op with a zero NotAfter is
	// given up [24h].
	Horizon time.Duration

	// Concurrency is how many handler calls Run makes at once [1]. A call
	// that has returned holds no slot while its outcome is written, so
	// that the next calls run during the journal's commit (at most eight
	// times Concurrency attempts are in flight, in their call or their
	// write); the op is reported done once its outcome is written.
	Concurrency int

	// PollInterval is how often Run asks a [SharedJournal] for due ops
	// when nothing else wakes it [1s]. Unused with other journals.
	PollInterval time.Duration

	// Lease is how long a claim on an op of a [SharedJournal] holds it
	// while its attempt runs [30s]; Run renews it every third of that.
	// When a process dies, its ops wait this long for another. Unused
	// with other journals.
	Lease time.Duration
}
