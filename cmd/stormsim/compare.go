package main

import (
	"time"

	"github.com/stormguard/retry/guard"
)

// comparedControls model three other libraries' SRE-style throttles by
// feeding their default constants to this library's Throttle: their code
// is not copied, and what our Throttle cannot express is left out (each
// entry says what). Read from the libraries' own sources:
//
//   - go-zero v1.10.3, core/breaker/googlebreaker.go: k = 1.5, window = 10s
//     in 40 buckets, protection = 5 (subtracted from the requests, here
//     MinRequests 5), no cap on the drop ratio (MaxReject 1). Not
//     modelled: k sliding towards minK = 1.1 while buckets keep failing,
//     the drop ratio scaled down by "working" buckets, and one request let
//     through per forcePassDuration = 1s.
//   - kratos aegis v0.2.0, circuitbreaker/sre/sre.go: success = 0.6
//     (K = 1/0.6), request = 100 (MinRequests), window = 3s in 10
//     buckets, no cap (MaxReject 1).
//   - failsafe-go v0.9.7, adaptivethrottler/adaptivethrottler.go:
//     successRateThreshold = 0.9 (K = 1/0.9), thresholdingPeriod = 1m in
//     20 buckets, maxRejectionRate = 0.9, executionThreshold = 0 (here
//     MinRequests 1, the least a Throttle takes). Not modelled: it records
//     only the executions it lets through, where the SRE book and our
//     Throttle count the refused requests too.
//
// Our Throttle's window always has 16 buckets.
func comparedControls() []control {
	return []control{
		{Name: "go-zero constants", Budget: true, Throttle: &guard.ThrottleOptions{K: 1.5, Window: 10 * time.Second, MinRequests: 5, MaxReject: 1}},
		{Name: "kratos constants", Budget: true, Throttle: &guard.ThrottleOptions{K: 1 / 0.6, Window: 3 * time.Second, MinRequests: 100, MaxReject: 1}},
		{Name: "failsafe-go constants", Budget: true, Throttle: &guard.ThrottleOptions{K: 1 / 0.9, Window: time.Minute, MinRequests: 1, MaxReject: 0.9}},
	}
}
