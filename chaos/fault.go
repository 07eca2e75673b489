package chaos

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrInvalidFault is matched (errors.Is) by the errors of [Fault.Validate].
var ErrInvalidFault = errors.New("chaos: invalid fault")

// ErrInjected is matched (errors.Is) by every error an injector makes up,
// so that a test or a log can tell an injected failure from a real one.
// The error matches the Fault's Err too, so that a classifier judges it as
// it would judge the real thing.
var ErrInjected = errors.New("chaos: injected fault")

// Fault is one kind of failure, injected into a share of the requests.
//
// Status, Err and Drop exclude each other; Latency may come alone or with
// any of them (a slow 503). Faults of one injector are drawn for in order:
// each fault that fires adds its Latency, and the first one with a Status,
// an Err or Drop is the request's answer, and the later ones are not drawn
// for.
type Fault struct {
	// Name labels the fault in [Switch.Stats] [made from its fields: "503",
	// "error", "drop", "latency 200ms", "503 after 200ms"]. Faults of the
	// same name are counted together.
	Name string

	// Switch arms the fault: it fires only while Switch is on. A nil
	// Switch leaves the fault off for good.
	Switch *Switch

	// Rate is the probability, in [0, 1], that a matching request gets the
	// fault.
	Rate float64

	// Status, from 200 to 599, is the answer: a client-side injector
	// returns it without reaching the server, a server-side one writes it
	// without calling the handler. Header goes with it (a Retry-After, say).
	Status int
	Header http.Header

	// Err is the error a client-side injector returns without reaching the
	// server; it is wrapped so that it matches both ErrInjected and Err. A
	// server-side injector closes the connection before the handler runs,
	// so that the client sees a transport error.
	Err error

	// Latency is added before the request is sent (client side) or
	// handled (server side), cut short when the request's ctx ends.
	Latency time.Duration

	// Drop loses the answer after the server acted: a server-side injector
	// runs the handler, throws its response away and closes the connection
	// (an HTTP/2 stream is reset); a client-side one sends the request,
	// throws its response away and returns an error that matches
	// ErrInjected and io.ErrUnexpectedEOF, as a connection lost before the
	// answer would look.
	Drop bool

	// Match, if set, limits the fault to the requests for which it reports
	// true [every request].
	Match func(*http.Request) bool
}

// Validate reports the first problem of f, with an error that matches
// ErrInvalidFault. An injector never injects an invalid fault.
func (f Fault) Validate() error {
	terminal := 0
	for _, set := range []bool{f.Status != 0, f.Err != nil, f.Drop} {
		if set {
			terminal++
		}
	}
	switch {
	case !(f.Rate >= 0 && f.Rate <= 1):
		return fmt.Errorf("%w: Rate %v is not in [0, 1]", ErrInvalidFault, f.Rate)
	case f.Latency < 0:
		return fmt.Errorf("%w: Latency %v is negative", ErrInvalidFault, f.Latency)
	case f.Status != 0 && (f.Status < 200 || f.Status > 599):
		return fmt.Errorf("%w: Status %d is not from 200 to 599", ErrInvalidFault, f.Status)
	case f.Header != nil && f.Status == 0:
		return fmt.Errorf("%w: a Header needs a Status", ErrInvalidFault)
	case terminal > 1:
		return fmt.Errorf("%w: Status, Err and Drop exclude each other", ErrInvalidFault)
	case terminal == 0 && f.Latency == 0:
		return fmt.Errorf("%w: the fault does nothing: set a Status, an Err, a Latency or Drop", ErrInvalidFault)
	}
	return nil
}

// label is the fault's name in Stats.
func (f *Fault) label() string {
	if f.Name != "" {
		return f.Name
	}
	var what string
	switch {
	case f.Drop:
		what = "drop"
	case f.Err != nil:
		what = "error"
	case f.Status != 0:
		what = fmt.Sprint(f.Status)
	default:
		return "latency " + f.Latency.String()
	}
	if f.Latency > 0 {
		what += " after " + f.Latency.String()
	}
	return what
}

// terminal reports whether the fault answers the request, rather than only
// delaying it.
func (f *Fault) terminal() bool { return f.Status != 0 || f.Err != nil || f.Drop }

// injectedError is an Err fault's error: it matches ErrInjected and the
// fault's own error.
type injectedError struct {
	fault string
	err   error
}

func (e *injectedError) Error() string {
	return fmt.Sprintf("chaos: injected fault %q: %v", e.fault, e.err)
}

func (e *injectedError) Unwrap() []error { return []error{ErrInjected, e.err} }
