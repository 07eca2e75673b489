package retrydebug_test

import (
	"fmt"

	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/retrydebug"
)

// A game day's switch on the debug page, next to the retries it causes.
func ExampleRecorder_Chaos() {
	rec := retrydebug.NewRecorder(0, 0)
	sw := chaos.NewSwitch(42)
	rec.Chaos("game day", sw)
	in := chaos.NewInjector(chaos.Fault{Switch: sw, Rate: 1, Status: 503})
	sw.On()
	in.Decide(nil)
	for _, s := range rec.Snapshot().Chaos {
		fmt.Println(s.Name, "on:", s.On, s.Faults)
	}
	// Output: game day on: true [{503 1 1}]
}
