package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// short is the game day CI runs: a few dozen orders, the added latency cut
// to a fiftieth (4ms), so that it takes well under a second.
var short = options{Orders: 60, Clients: 4, Seed: 1, LatencyScale: 0.02}

// With the library's retries, idempotency keys and the outbox, the faults
// cost the users almost nothing and nothing is made twice; without them,
// a share of the calls fails, about as many as the faults hit.
func TestGameDay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	with, err := run(ctx, withRetries(short, true))
	require.NoError(t, err)
	without, err := run(ctx, withRetries(short, false))
	require.NoError(t, err)

	assert.Zero(t, with.OrdersTwice, "orders made twice with retries")
	assert.Zero(t, with.ShippedTwice, "shipments made twice with retries")
	assert.Zero(t, without.OrdersTwice, "orders made twice without retries")
	assert.GreaterOrEqual(t, with.Succeeded, short.Orders*95/100, "user calls that succeeded with retries")
	assert.Less(t, without.Succeeded, with.Succeeded, "retries helped no user")
	assert.Zero(t, with.DeadLetters, "shipments given up with retries")
	assert.Equal(t, with.Shipments, with.Shipped, "shipments delivered with retries")
	require.Len(t, with.Faults, 3)
	for _, f := range with.Faults {
		assert.Positive(t, f.Injected, "%s was never injected: the game day proves nothing", f.Name)
	}
}

func withRetries(o options, on bool) options {
	o.Retries = on
	return o
}

// The command prints both runs side by side.
func TestGameDayOutput(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, gameDay(ctx, &out, short))
	for _, want := range []string{"with retries", "without", "user calls succeeded", "p99 latency of user calls",
		"orders made twice", "shipments delivered", "fault answer lost", "fault overloaded", "fault slow"} {
		assert.Contains(t, out.String(), want)
	}
	assert.Error(t, gameDay(ctx, &out, options{}), "no orders")
}
