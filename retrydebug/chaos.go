package retrydebug

import (
	"fmt"
	"slices"

	"github.com/stormguard/retry/chaos"
)

// maxSwitches bounds the chaos switches a Recorder shows; a service has a
// few.
const maxSwitches = 32

// Chaos makes the page, and its JSON, show the chaos.Switch sw under name:
// whether it is on, its seed, and for each of its faults the requests
// drawn for and the faults injected, read from sw.Stats each time they are
// served. A switch that is on is shown in red, so that a game day left
// running is seen:
//
//	rec.Chaos("game day", sw)
//
// Registering a name again replaces its switch; a nil sw removes it. A
// Recorder shows at most 32 switches; further names are ignored.
func (r *Recorder) Chaos(name string, sw *chaos.Switch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	setNamed(&r.switches, name, sw, sw == nil, maxSwitches)
}

// ChaosSwitch is the state of a switch registered with [Recorder.Chaos].
type ChaosSwitch struct {
	Name   string             `json:"name"`
	On     bool               `json:"on"`
	Seed   int64              `json:"seed"`
	Faults []chaos.FaultStats `json:"faults"` // by name
}

// chaosSwitches reads the registered switches, in the order registered.
func (r *Recorder) chaosSwitches() []ChaosSwitch {
	r.mu.RLock()
	sws := slices.Clone(r.switches)
	r.mu.RUnlock()
	out := make([]ChaosSwitch, 0, len(sws))
	for _, n := range sws {
		st := n.v.Stats()
		out = append(out, ChaosSwitch{Name: n.name, On: st.On, Seed: st.Seed, Faults: st.Faults})
	}
	return out
}

// chaosRow is a fault's line on the page.
type chaosRow struct {
	Switch, State, Fault string
	On                   bool
	Seed                 int64
	Requests, Injected   uint64
	Share                string
}

func newChaosRows(sws []ChaosSwitch) []chaosRow {
	var rows []chaosRow
	for _, s := range sws {
		state := "off"
		if s.On {
			state = "on"
		}
		row := chaosRow{Switch: s.Name, State: state, On: s.On, Seed: s.Seed, Fault: "(no faults)"}
		if len(s.Faults) == 0 {
			rows = append(rows, row)
		}
		for _, f := range s.Faults {
			row.Fault, row.Requests, row.Injected, row.Share = f.Name, f.Requests, f.Injected, "–"
			if f.Requests > 0 {
				row.Share = fmt.Sprintf("%.1f%%", 100*float64(f.Injected)/float64(f.Requests))
			}
			rows = append(rows, row)
		}
	}
	return rows
}
