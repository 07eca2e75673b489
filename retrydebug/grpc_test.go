package retrydebug_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stormguard/retry/retrydebug"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gRPC status codes, as numbers: this package does not import grpc.
const (
	codeOK          = 0
	codeUnavailable = 14
)

// RecordGRPC names a call by its method, without the leading slash, and
// keeps its status code's name; the page shows it, and a code past the
// known ones reads as its number.
func TestRecordGRPC(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	rec.RecordGRPC(context.Background(), "/inventory.v1.Stock/Get", codeOK, retried(t, 1))
	rec.RecordGRPC(context.Background(), "/inventory.v1.Stock/Get", codeUnavailable, exhausted(t, 3))
	rec.RecordGRPC(context.Background(), "/inventory.v1.Stock/Put", 99, notRetried(t))

	s := rec.Snapshot()
	require.Len(t, s.Operations, 2)
	getOp, put := s.Operations[0], s.Operations[1]
	assert.Equal(t, "inventory.v1.Stock/Get", getOp.Name)
	assert.EqualValues(t, 2, getOp.Calls)
	assert.EqualValues(t, 3, getOp.Retries)
	assert.Equal(t, "UNAVAILABLE", getOp.Recent[0].GRPCCode)
	assert.Equal(t, "OK", getOp.Recent[1].GRPCCode)
	assert.Zero(t, getOp.Recent[0].Status, "no HTTP status")
	assert.Equal(t, "CODE(99)", put.Recent[0].GRPCCode)

	_, body := get(t, rec, "/?op="+urlQuery("inventory.v1.Stock/Get"))
	assert.Contains(t, body, "gRPC UNAVAILABLE")
	assert.NotContains(t, body, secret)
	_, js := get(t, rec, "/?format=json")
	var decoded map[string]any
	require.NoError(t, json.Unmarshal([]byte(js), &decoded))
	assert.Contains(t, js, `"grpc_code": "UNAVAILABLE"`)

	// An HTTP request and a retry.Do have no gRPC code.
	rec.Record("plain", succeeded(t))
	_, js = get(t, rec, "/?op=plain&format=json")
	assert.NotContains(t, js, "grpc_code")
}

// Methods beyond the cap share the overflow bucket, under their own names.
func TestRecordGRPCOverflow(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 1)
	for _, m := range []string{"/a.S/M", "/b.S/M", "/c.S/M"} {
		rec.RecordGRPC(context.Background(), m, codeOK, succeeded(t))
	}
	s := rec.Snapshot()
	require.Len(t, s.Operations, 2)
	assert.True(t, s.Operations[1].Other)
	assert.EqualValues(t, 2, s.Operations[1].Calls)
	assert.Equal(t, "c.S/M", s.Operations[1].Recent[0].Name)
}
