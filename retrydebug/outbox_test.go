package retrydebug_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/internal/outboxfix"
	"github.com/stormguard/retry/retrydebug"
)

// The seam: an Outbox running real ops, and the page and its JSON show the
// numbers Stats has, read when they are served, with no key, payload or
// error text of any op.
func TestOutboxPanel(t *testing.T) {
	t.Parallel()
	fx := outboxfix.Start(t, secret)
	fx.Fill(t)
	o := fx.Outbox
	rec := retrydebug.NewRecorder(0, 0)
	_, body := get(t, rec, "/debug/retries")
	assert.NotContains(t, body, "Outboxes", "no section before one is registered")

	rec.Outbox("payments", o)
	want := retrydebug.OutboxOps{Name: "payments", Pending: 1, Running: 1, Failed: 1, OldestPending: 2 * time.Minute}
	assert.Equal(t, []retrydebug.OutboxOps{want}, rec.Snapshot().Outboxes)
	_, body = get(t, rec, "/debug/retries")
	assert.Contains(t, body, `<tr class="outbox"><td class="name">payments</td><td class="num pending">1</td><td class="num running">1</td><td class="num failed bad">1</td><td class="num oldest">2m0s</td></tr>`)
	assert.NotContains(t, body, secret)

	_, js := get(t, rec, "/debug/retries?format=json")
	var snap struct {
		Outboxes []retrydebug.OutboxOps `json:"outboxes"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &snap))
	assert.Equal(t, []retrydebug.OutboxOps{want}, snap.Outboxes)
	assert.NotContains(t, js, secret)

	// The numbers move with the ops.
	fx.Release()
	require.Eventually(t, func() bool { return o.Stats().Running == 0 }, 10*time.Second, time.Millisecond)
	want.Running = 0
	assert.Equal(t, []retrydebug.OutboxOps{want}, rec.Snapshot().Outboxes)

	rec.Outbox("payments", nil)
	assert.Empty(t, rec.Snapshot().Outboxes)
	_, body = get(t, rec, "/debug/retries")
	assert.NotContains(t, body, "Outboxes")
}
