package main

import (
	"testing"

	"github.com/stormguard/retry/guard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLedgerFollowsGRFCA6 drives the real Budget through the ledger and
// checks the gRFC A6 arithmetic: a full bucket of 10, a failure takes 1, a
// success gives back 0.1, and a retry is allowed only while more than 5
// tokens remain.
func TestLedgerFollowsGRFCA6(t *testing.T) {
	t.Parallel()
	b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
	require.NoError(t, err)
	l := ledger{budget: b}

	for i, want := range []bool{true, true, true, true, false, false} {
		assert.Equal(t, want, l.Failed(false), "failure %d: retry allowed", i+1)
	}
	assert.InDelta(t, 4.0, b.Tokens(), 1e-9, "tokens after 6 failures")

	for range 11 {
		l.Succeeded()
	}
	assert.InDelta(t, 5.1, b.Tokens(), 1e-9, "tokens after 11 successes")
	assert.False(t, l.Failed(false), "a failure at 5.1 tokens leaves 4.1: retry allowed")

	for range 20 {
		l.Succeeded()
	}
	assert.True(t, l.Failed(false), "a failure at 6.1 tokens leaves 5.1: retry refused")
	assert.InDelta(t, 5.1, b.Tokens(), 1e-9)
}

func TestLedgerLastAttemptOnlyRecords(t *testing.T) {
	t.Parallel()
	b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
	require.NoError(t, err)
	l := ledger{budget: b}
	assert.False(t, l.Failed(true), "a client without attempts left retried")
	assert.InDelta(t, 9.0, b.Tokens(), 1e-9, "the last failure was not charged")
}

func TestLedgerWithoutBudget(t *testing.T) {
	t.Parallel()
	var l ledger
	for range 100 {
		require.True(t, l.Failed(false))
	}
	assert.False(t, l.Failed(true))
	l.Succeeded() // must not panic
}
