package pgjournal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/stormguard/retry"
)

// traceJSON is how the trace column keeps an Entry's retry.Trace: its stop
// reason and the attempts it keeps (at most 64), never an error's text.
// An empty column is an empty Trace.
type traceJSON struct {
	Stop     retry.StopReason `json:"stop"`
	Attempts []attemptJSON    `json:"attempts"`
}

type attemptJSON struct {
	Number   int           `json:"n"`
	Wait     time.Duration `json:"wait,omitempty"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"dur,omitempty"`
	Reason   string        `json:"reason,omitempty"`
}

func encodeTrace(t retry.Trace) []byte {
	if t.Attempts() == 0 && t.Stop() == retry.StopNone {
		return []byte{}
	}
	v := traceJSON{Stop: t.Stop()}
	for a := range t.All() {
		v.Attempts = append(v.Attempts, attemptJSON{a.Number, a.Wait, a.Start, a.Duration, a.Reason})
	}
	b, _ := json.Marshal(v) // plain numbers, strings and times: cannot fail
	return b
}

func decodeTrace(b []byte) (retry.Trace, error) {
	if len(b) == 0 {
		return retry.Trace{}, nil
	}
	var v traceJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return retry.Trace{}, fmt.Errorf("pgjournal: bad trace column: %w", err)
	}
	as := make([]retry.Attempt, len(v.Attempts))
	for i, a := range v.Attempts {
		as[i] = retry.Attempt{Number: a.Number, Wait: a.Wait, Start: a.Start, Duration: a.Duration, Reason: a.Reason}
	}
	return retry.NewTrace(v.Stop, as), nil
}
