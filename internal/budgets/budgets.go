// Package budgets lets the packages beside retry count their own attempts
// against a retry.Budget, as retry.Do counts its own: the gRPC integration
// sends a hedgingPolicy's copies itself, and gRFC A6 throttles them with the
// same token bucket as retries. Package retry sets the functions when it is
// initialised, so they are never nil in a program that imports it; their
// argument is a *retry.Budget, which this package cannot name.
package budgets

var (
	// Allow reports whether the bucket holds more than half its tokens:
	// whether a retry, or a hedge, may go.
	Allow func(b any) bool
	// Failed takes a token for a failed attempt.
	Failed func(b any)
	// Succeeded gives back a ratio of a token for a success.
	Succeeded func(b any)
)
