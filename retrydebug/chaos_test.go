package retrydebug_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/retrydebug"
)

// The page and its JSON show a switch's state and counts, read when they
// are served; a switch that is on is marked.
func TestChaosPanel(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	_, body := get(t, rec, "/debug/retries")
	assert.NotContains(t, body, "Faults injected", "no section before a switch is registered")

	sw := chaos.NewSwitch(42)
	in := chaos.NewInjector(chaos.Fault{Switch: sw, Rate: 1, Status: 503}, chaos.Fault{Switch: sw, Name: "slow <b>", Rate: 0, Latency: 1})
	rec.Chaos("game day", sw)
	_, body = get(t, rec, "/debug/retries")
	assert.Contains(t, body, `<tr class="fault"><td class="name">game day</td><td class="state">off</td><td class="num">42</td><td class="name">503</td><td class="num">0</td><td class="num injected">0</td><td class="num">–</td></tr>`)

	sw.On()
	for range 4 {
		in.Decide(nil)
	}
	want := retrydebug.ChaosSwitch{Name: "game day", On: true, Seed: 42, Faults: []chaos.FaultStats{
		{Name: "503", Requests: 4, Injected: 4},
		{Name: "slow <b>"},
	}}
	assert.Equal(t, []retrydebug.ChaosSwitch{want}, rec.Snapshot().Chaos)
	_, body = get(t, rec, "/debug/retries")
	assert.Contains(t, body, `<td class="state bad">on</td><td class="num">42</td><td class="name">503</td><td class="num">4</td><td class="num injected">4</td><td class="num">100.0%</td></tr>`)
	assert.Contains(t, body, `slow &lt;b&gt;`, "names are escaped")

	_, js := get(t, rec, "/debug/retries?format=json")
	var snap struct {
		Chaos []retrydebug.ChaosSwitch `json:"chaos"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &snap))
	assert.Equal(t, []retrydebug.ChaosSwitch{want}, snap.Chaos)

	// A switch with no faults yet has a line; nil removes a switch.
	rec.Chaos("spare", chaos.NewSwitch(1))
	_, body = get(t, rec, "/debug/retries")
	assert.Contains(t, body, `<td class="name">spare</td><td class="state">off</td><td class="num">1</td><td class="name">(no faults)</td>`)
	rec.Chaos("game day", nil)
	rec.Chaos("spare", nil)
	assert.Empty(t, rec.Snapshot().Chaos)
}

// A Recorder keeps at most 32 switches; a name registered again replaces
// its switch.
func TestChaosBounded(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	for i := range 40 {
		rec.Chaos(fmt.Sprint("s", i), chaos.NewSwitch(int64(i)))
	}
	assert.Len(t, rec.Snapshot().Chaos, 32)
	rec.Chaos("s0", chaos.NewSwitch(99))
	assert.Equal(t, int64(99), rec.Snapshot().Chaos[0].Seed)
}
