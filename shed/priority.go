package shed

import (
	"net/http"
	"strconv"
)

// Priority is how much a request matters, lowest first: the criticalities
// of the SRE book's "Handling Overload". Under overload the lower ones are
// shed first: a request is never shed while one of a lower Priority holds
// a queue place it could take. The zero Priority is [Critical].
type Priority int8

const (
	// Sheddable: work whose loss nobody sees now (batch, prefetch).
	Sheddable Priority = iota - 2
	// SheddablePlus: work that is retried later anyway.
	SheddablePlus
	// Critical: a user waits for it; the default.
	Critical
	// CriticalPlus: its loss is an outage (a login, a payment).
	CriticalPlus
)

// PriorityHeader is the request header that the default Options.Priority
// reads, and that retryhttp.WithPriority sets: one of the names
// [Priority.String] gives ("sheddable", "sheddable_plus", "critical",
// "critical_plus"). A missing or unknown value is [Critical]. gRPC carries
// it as the metadata key "criticality".
const PriorityHeader = "Criticality"

// LoadShedHeader is set, to "request", on every answer to a shed request
// (gRPC: the trailer "load-shed"): its Retry-After, or pushback, is the
// wait of that request, not a pause of the whole client. A client that
// holds every request to an origin for a Retry-After (as a 429 asks, or a
// 503 for maintenance) would, for a shed, stop all its traffic to a
// server that refused only its excess, and goodput would collapse:
// retryhttp and retrygrpc wait that request only when it is set.
const LoadShedHeader = "Load-Shed"

var priorityNames = [...]string{"sheddable", "sheddable_plus", "critical", "critical_plus"}

// String returns the name PriorityHeader carries.
func (p Priority) String() string {
	if p < Sheddable || p > CriticalPlus {
		return "Priority(" + strconv.Itoa(int(p)) + ")"
	}
	return priorityNames[p-Sheddable]
}

// ParsePriority returns the Priority that s names, as [Priority.String]
// writes it, and false for any other s.
func ParsePriority(s string) (Priority, bool) {
	for i, n := range priorityNames {
		if s == n {
			return Sheddable + Priority(i), true
		}
	}
	return Critical, false
}

// HeaderPriority is the default Options.Priority: the request's
// PriorityHeader, or Critical.
func HeaderPriority(r *http.Request) Priority {
	// PriorityHeader is canonical: index the map, sparing Header.Get's
	// canonicalization of the name on every request.
	vs := r.Header[PriorityHeader]
	if len(vs) == 0 {
		return Critical
	}
	p, _ := ParsePriority(vs[0])
	return p
}

// level is p's queue level in the engine, 0 the lowest.
func (p Priority) level() int {
	return int(min(max(p, Sheddable), CriticalPlus) - Sheddable)
}
