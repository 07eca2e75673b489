package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain runs the checkout process when the demo re-executes the test
// binary as one.
func TestMain(m *testing.M) {
	if os.Getenv(envJournal) != "" {
		os.Exit(checkoutProcess(os.Stdout))
	}
	goleak.VerifyTestMain(m)
}

// The checkout process is killed with SIGKILL while the card is being
// charged; the one started after it resumes the payment from the journal
// under the same key, and the server has charged the card once.
func TestKilledMidPaymentChargesOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	s, err := demo(ctx, os.Args[0], &out)
	require.NoError(t, err, out.String())
	assert.Equal(t, 1, s.Kills, "killed mid-payment")
	assert.Equal(t, 1, s.Charges, "charges; output:\n%s", out.String())
	assert.Equal(t, 1, s.Keys, "keys the sends carried")
	assert.GreaterOrEqual(t, s.Sends, 2, "the payment was sent again after the kill")
	assert.Contains(t, out.String(), "resuming 1 pending payment")
	assert.Equal(t, 1, strings.Count(out.String(), "payment succeeded"), out.String())
}
