package idempotency_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts  idempotency.Options
		field string
	}{
		{idempotency.Options{Header: "Idempotency Key"}, "Header"},
		{idempotency.Options{Methods: []string{}}, "Methods"},
		{idempotency.Options{Methods: []string{"POST", "PO ST"}}, "Methods"},
		{idempotency.Options{TTL: -time.Second}, "TTL"},
		{idempotency.Options{TTL: time.Microsecond}, "TTL"},
		{idempotency.Options{Lease: -time.Second}, "Lease"},
		{idempotency.Options{Lease: 999 * time.Microsecond}, "Lease"},
		{idempotency.Options{TTL: time.Second, Lease: time.Minute}, "Lease"},
		{idempotency.Options{MaxBodyBytes: -1}, "MaxBodyBytes"},
		{idempotency.Options{MaxResponseBytes: -1}, "MaxResponseBytes"},
		{idempotency.Options{StoreTimeout: -time.Second}, "StoreTimeout"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			m, err := idempotency.New(tc.opts)
			assert.Nil(t, m)
			require.Error(t, err)
			assert.ErrorIs(t, err, idempotency.ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
}

func TestNewRejectsInvalidMemoryOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts  idempotency.MemoryOptions
		field string
	}{
		{idempotency.MemoryOptions{MaxEntries: -1}, "MaxEntries"},
		{idempotency.MemoryOptions{MaxBytes: -1}, "MaxBytes"},
	} {
		_, err := idempotency.NewMemoryStore(tc.opts)
		require.ErrorIs(t, err, idempotency.ErrInvalidOptions)
		assert.Contains(t, err.Error(), tc.field)
	}
}

func TestNewCopiesMethods(t *testing.T) {
	t.Parallel()
	methods := []string{http.MethodPost}
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Methods: methods}), o)
	methods[0] = http.MethodGet // after New: must not change the middleware
	do(t, srv, req{key: "k"})
	assert.Equal(t, "true", do(t, srv, req{key: "k"}).header.Get(idempotency.ReplayedHeader))
}

func TestCustomHeader(t *testing.T) {
	t.Parallel()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Header: "X-Request-Key", Required: true}), o)
	p := requireProblem(t, do(t, srv, req{key: "ignored: wrong header"}), http.StatusBadRequest, false)
	assert.Contains(t, p.Detail, "X-Request-Key")
	do(t, srv, req{header: []string{"X-Request-Key", "k"}})
	again := do(t, srv, req{header: []string{"X-Request-Key", "k"}})
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
}

func TestDefaultRetryable(t *testing.T) {
	t.Parallel()
	for status := 100; status < 600; status++ {
		want := status == 408 || status == 429 || status >= 500
		assert.Equal(t, want, idempotency.DefaultRetryable(status), "DefaultRetryable(%d)", status)
	}
}

func TestErrorsAreDistinct(t *testing.T) {
	t.Parallel()
	errs := []error{idempotency.ErrInvalidOptions, idempotency.ErrLeaseLost, idempotency.ErrStoreFull}
	for i, a := range errs {
		for j, b := range errs {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}
