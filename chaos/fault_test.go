package chaos_test

import (
	"errors"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stormguard/retry/chaos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFaultValidate(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		f    chaos.Fault
		want string // "" for valid
	}{
		{"status", chaos.Fault{Rate: 0.2, Status: 503}, ""},
		{"status with header", chaos.Fault{Rate: 1, Status: 429, Header: http.Header{"Retry-After": {"1"}}}, ""},
		{"error", chaos.Fault{Rate: 0.1, Err: boom}, ""},
		{"latency alone", chaos.Fault{Rate: 0.1, Latency: time.Second}, ""},
		{"slow drop", chaos.Fault{Rate: 0.05, Drop: true, Latency: time.Millisecond}, ""},
		{"rate 0 is off", chaos.Fault{Status: 503}, ""},
		{"rate above 1", chaos.Fault{Rate: 1.5, Status: 503}, "Rate 1.5 is not in [0, 1]"},
		{"rate negative", chaos.Fault{Rate: -0.1, Status: 503}, "Rate -0.1 is not in [0, 1]"},
		{"rate NaN", chaos.Fault{Rate: math.NaN(), Status: 503}, "Rate NaN is not in [0, 1]"},
		{"negative latency", chaos.Fault{Rate: 1, Latency: -time.Second}, "Latency -1s is negative"},
		{"status 99", chaos.Fault{Rate: 1, Status: 99}, "Status 99 is not from 200 to 599"},
		{"status 600", chaos.Fault{Rate: 1, Status: 600}, "Status 600 is not from 200 to 599"},
		{"header alone", chaos.Fault{Rate: 1, Latency: 1, Header: http.Header{}}, "a Header needs a Status"},
		{"status and drop", chaos.Fault{Rate: 1, Status: 503, Drop: true}, "exclude each other"},
		{"error and status", chaos.Fault{Rate: 1, Status: 503, Err: boom}, "exclude each other"},
		{"nothing", chaos.Fault{Rate: 1}, "does nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, chaos.ErrInvalidFault)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// An invalid fault is never injected, whatever its switch.
func TestInvalidFaultNeverFires(t *testing.T) {
	t.Parallel()
	sw := chaos.NewSwitch(1)
	sw.On()
	in := chaos.NewInjector(chaos.Fault{Switch: sw, Rate: 2, Status: 503})
	assert.False(t, in.Active(), "an injector of invalid faults only")
	for range 100 {
		assert.Zero(t, in.Decide(nil))
	}
	assert.Empty(t, sw.Stats().Faults)
}

// The names faults are counted under, when they have none of their own.
func TestFaultNames(t *testing.T) {
	t.Parallel()
	sw := chaos.NewSwitch(1)
	chaos.NewInjector(
		chaos.Fault{Switch: sw, Status: 503},
		chaos.Fault{Switch: sw, Status: 429, Latency: 200 * time.Millisecond},
		chaos.Fault{Switch: sw, Err: errors.New("x")},
		chaos.Fault{Switch: sw, Drop: true},
		chaos.Fault{Switch: sw, Latency: time.Second},
		chaos.Fault{Switch: sw, Name: "slow dependency", Latency: time.Second},
	)
	var names []string
	for _, f := range sw.Stats().Faults {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"429 after 200ms", "503", "drop", "error", "latency 1s", "slow dependency"}, names)
}
