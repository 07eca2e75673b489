package retry

import "context"

// Seed 002's arithmetic: an HTTP client, a repository and a task queue that
// each retry three times make 27 calls. So a Do marks the ctx it gives op,
// and a Do that finds the mark on its own ctx is nested inside another
// retry loop: unless its Policy sets RetryNested, it makes one attempt and
// leaves retrying to the loop outside, the one owner.

type nestedKey struct{}

// markedBackground is the marked form of context.Background and TODO, the
// contexts of most workers and tests, made once so that their Do calls
// allocate nothing. It is never written after init.
var markedBackground = context.WithValue(context.Background(), nestedKey{}, true)

func isNested(ctx context.Context) bool {
	return ctx.Value(nestedKey{}) != nil
}

// markNested returns ctx marked as the ctx of a retry loop's op.
func markNested(ctx context.Context) context.Context {
	if ctx == context.Background() || ctx == context.TODO() {
		return markedBackground
	}
	return context.WithValue(ctx, nestedKey{}, true)
}
