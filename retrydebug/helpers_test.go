package retrydebug_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/require"
)

// errUnavailable stands for a transient failure, a "503".
var errUnavailable = errors.New("503 service unavailable")

// secret is text that must never reach the page: it is in errors, headers
// and query values of the tests' calls.
const secret = "s3cr3t-t0ken"

// trace runs retry.Do on a fake clock and returns its Trace.
func trace(t testing.TB, op func(context.Context) error, p retry.Policy) retry.Trace {
	t.Helper()
	p.Jitter = retry.NoJitter // waits of BaseBackoff·2^(n−1): 200ms, 400ms, …
	tr, _ := retrytest.Do(context.Background(), op, p)
	return tr
}

// succeeded is a call that succeeded at once.
func succeeded(t testing.TB) retry.Trace {
	t.Helper()
	return trace(t, retrytest.Script().Call, retry.Policy{})
}

// retried is a call that failed n times and then succeeded.
func retried(t testing.TB, n int) retry.Trace {
	t.Helper()
	errs := make([]error, n)
	for i := range errs {
		errs[i] = errUnavailable
	}
	return trace(t, retrytest.Script(errs...).Call, retry.Policy{MaxAttempts: n + 1})
}

// exhausted is a call that gave up after attempts failures.
func exhausted(t testing.TB, attempts int) retry.Trace {
	t.Helper()
	return trace(t, retrytest.Always(errors.New(secret)).Call, retry.Policy{MaxAttempts: attempts})
}

// notRetried is a call that failed with a permanent error.
func notRetried(t testing.TB) retry.Trace {
	t.Helper()
	return trace(t, retrytest.Always(retry.Permanent(errors.New(secret))).Call, retry.Policy{})
}

// took is a call that failed once and succeeded after a wait of d, so that
// its Elapsed is d.
func took(t testing.TB, d time.Duration) retry.Trace {
	t.Helper()
	tr := trace(t, retrytest.Script(errUnavailable).Call, retry.Policy{BaseBackoff: d, MaxElapsed: 1000 * time.Hour})
	require.Equal(t, d, tr.Elapsed())
	return tr
}

// get serves a GET of target with h and returns the response and its body.
func get(t *testing.T, h http.Handler, target string) (*http.Response, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w.Result(), w.Body.String()
}

// errorsIs is errors.Is, named so that a table reads well.
var errorsIs = errors.Is

// urlQuery escapes s for a query.
var urlQuery = url.QueryEscape

// newBudget returns a Budget of the zero Budget's size.
func newBudget() (*guard.Budget, error) {
	return guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
}
