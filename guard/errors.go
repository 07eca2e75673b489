package guard

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidOptions is matched, with errors.Is, by every error of a
	// constructor given options it cannot use; the error names the field.
	ErrInvalidOptions = errors.New("guard: invalid options")

	// ErrTooManyWatchers is the error of a Watch on a guard that has
	// MaxWatchers watchers already.
	ErrTooManyWatchers = errors.New("guard: too many watchers")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
}
