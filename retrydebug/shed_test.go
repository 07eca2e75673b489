package retrydebug_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/internal/shedfix"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/shed"
)

// A registered Limiter's state, read when the page and its JSON are
// served: its limit, what is in flight and queued, what it admitted and
// shed. Registering the name again replaces it, nil removes it, and names
// past 32 are ignored.
func TestShedLimiterPanel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, release := shedfix.Busy(t)
		rec := retrydebug.NewRecorder(0, 0)
		_, body := get(t, rec, "/debug/retries")
		assert.NotContains(t, body, "Load shedding", "no section before one is registered")

		rec.ShedLimiter("api", l)
		want := retrydebug.ShedStatus{Name: "api", Limit: 2, InFlight: 2, Queued: 1, Admitted: 2, Shed: 1}
		assert.Equal(t, []retrydebug.ShedStatus{want}, rec.Snapshot().ShedLimiters)
		_, body = get(t, rec, "/debug/retries")
		assert.Contains(t, body, "<h2>Load shedding</h2>")
		assert.Contains(t, body, `<tr class="limiter"><td class="name">api</td><td class="num limit">2</td><td class="num inflight">2</td><td class="num queued">1</td><td class="num admitted">2</td><td class="num shed bad">1</td><td class="num">33.3%</td>`)

		_, js := get(t, rec, "/debug/retries?format=json")
		var snap struct {
			Shed []retrydebug.ShedStatus `json:"shed_limiters"`
		}
		require.NoError(t, json.Unmarshal([]byte(js), &snap))
		assert.Equal(t, []retrydebug.ShedStatus{want}, snap.Shed)

		// The numbers move with the Limiter.
		release()
		got := rec.Snapshot().ShedLimiters[0]
		assert.Equal(t, 0, got.InFlight)
		assert.Equal(t, 0, got.Queued)
		assert.EqualValues(t, 3, got.Admitted)
		assert.InDelta(t, float64(2*time.Millisecond/3), float64(got.Latency), 1, "the mean of three: the first two held 1ms, the queued one none")

		other, err := shed.New(shed.Options{Algorithm: shed.Fixed, InitialLimit: 7})
		require.NoError(t, err)
		rec.ShedLimiter("api", other)
		assert.Equal(t, 7, rec.Snapshot().ShedLimiters[0].Limit, "replaced")
		for i := range 40 {
			rec.ShedLimiter("l"+strconv.Itoa(i), other)
		}
		assert.Len(t, rec.Snapshot().ShedLimiters, 32, "bounded")
		rec.ShedLimiter("api", nil)
		for _, s := range rec.Snapshot().ShedLimiters {
			assert.NotEqual(t, "api", s.Name)
		}
	})
}
