package retryconfig

import (
	"fmt"
	"strings"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/guard"
)

// maxErrors bounds how many problems one error reports: enough to fix a
// document in one go, not so many that a garbage file floods a log.
const maxErrors = 10

// pathError is one problem of a document, at a path such as
// "policies.payments.maxBackoff".
type pathError struct {
	path   string
	msg    string
	policy bool // a policy's field is at fault: matches retry.ErrInvalidPolicy
	guard  bool // a guard's field is at fault: matches guard.ErrInvalidOptions
	fault  bool // a policy's chaos is at fault: matches chaos.ErrInvalidFault too
}

func (e *pathError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

func (e *pathError) Is(target error) bool {
	return e.policy && target == retry.ErrInvalidPolicy || e.guard && target == guard.ErrInvalidOptions ||
		e.fault && target == chaos.ErrInvalidFault
}

// problems collects the errors of one document.
type problems struct {
	errs []*pathError
	more int
}

func (p *problems) add(path string, policy bool, format string, args ...any) {
	if len(p.errs) == maxErrors {
		p.more++
		return
	}
	p.errs = append(p.errs, &pathError{path: path, msg: fmt.Sprintf(format, args...), policy: policy})
}

// addGuard adds a problem of a guard's options at path.
func (p *problems) addGuard(path string, format string, args ...any) {
	p.add(path, false, format, args...)
	if len(p.errs) > 0 && p.errs[len(p.errs)-1].path == path {
		p.errs[len(p.errs)-1].guard = true
	}
}

// addFault adds a problem of a policy's faults at path.
func (p *problems) addFault(path string, format string, args ...any) {
	p.add(path, true, format, args...)
	if len(p.errs) > 0 && p.errs[len(p.errs)-1].path == path {
		p.errs[len(p.errs)-1].fault = true
	}
}

// has reports whether a problem was found at path already.
func (p *problems) has(path string) bool {
	for _, e := range p.errs {
		if e.path == path {
			return true
		}
	}
	return false
}

// err returns nil, or one error that lists every problem and matches each
// of them with errors.Is.
func (p *problems) err(what string) error {
	if len(p.errs) == 0 {
		return nil
	}
	return &docError{what: what, errs: p.errs, more: p.more}
}

type docError struct {
	what string
	errs []*pathError
	more int
}

func (e *docError) Error() string {
	var b strings.Builder
	b.WriteString("retryconfig: ")
	if len(e.errs) > 1 {
		b.WriteString(e.what)
		b.WriteString(": ")
	}
	for i, pe := range e.errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(pe.Error())
	}
	if e.more > 0 {
		fmt.Fprintf(&b, "; and %d more", e.more)
	}
	return b.String()
}

func (e *docError) Unwrap() []error {
	errs := make([]error, len(e.errs))
	for i, pe := range e.errs {
		errs[i] = pe
	}
	return errs
}
