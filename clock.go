package retry

import "github.com/stormguard/retry/guard"

// Clock is the time source of a [Policy]: what [Do] needs of time, no
// more. It is guard.Clock, the one interface of the Policy and its guards,
// so that one clock (a *clock.Mock of github.com/benbjohnson/clock, a
// [retrytest.Clock], a fake of a few lines) serves both; guard.Clock's doc
// says what a fake must do.
//
// [retrytest.Clock]: https://pkg.go.dev/github.com/stormguard/retry/retrytest#Clock
type Clock = guard.Clock
