package retry

import "github.com/stormguard/retry/internal/budgets"

// The packages beside retry reach a Budget's bucket through
// internal/budgets, so that it stays one bucket with one set of rules
// without widening Budget's exported API.
func init() {
	budgets.Allow = func(b any) bool { return b.(*Budget).allow() }
	budgets.Failed = func(b any) { b.(*Budget).failed() }
	budgets.Succeeded = func(b any) { b.(*Budget).succeeded() }
}
