// Package shedfix is a test fixture that the panel's and the OpenTelemetry
// tests share: a shed.Limiter with requests in flight, queued and shed.
package shedfix

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/shed"
)

// Busy returns a Fixed Limiter of limit 2 and a queue of 1 that holds two
// requests in flight and one queued, and has shed one, and a func that,
// 1 ms later, ends the two and the queued one, which is admitted and done
// at once: then 3 were admitted, 1 shed, and the recent latency is 2/3 ms.
// Call both in the test's synctest bubble.
func Busy(t *testing.T) (l *shed.Limiter, release func()) {
	t.Helper()
	l, err := shed.New(shed.Options{Algorithm: shed.Fixed, InitialLimit: 2, MaxQueue: 1, QueueTimeout: time.Minute})
	require.NoError(t, err)
	ctx := context.Background()
	r1, err := l.Acquire(ctx, shed.Critical)
	require.NoError(t, err)
	r2, err := l.Acquire(ctx, shed.Critical)
	require.NoError(t, err)
	queued := make(chan struct{})
	go func() {
		defer close(queued)
		if release, err := l.Acquire(ctx, shed.Critical); err == nil {
			release(shed.Success)
		}
	}()
	synctest.Wait()
	_, err = l.Acquire(ctx, shed.Critical)
	require.ErrorIs(t, err, shed.ErrShed)
	return l, func() {
		time.Sleep(time.Millisecond)
		r1(shed.Success)
		<-queued
		r2(shed.Success)
	}
}
