package retryconfig

import (
	"fmt"
	"math"

	"github.com/stormguard/retry/guard"
)

// newBudget makes the budget of a document: both numbers are required
// there (gRFC A6's retryThrottling has no defaults), so a zero is an
// error, not guard.BudgetOptions' default.
func newBudget(maxTokens, tokenRatio float64) (*guard.Budget, error) {
	switch {
	case !(maxTokens > 0) || math.IsInf(maxTokens, 0):
		return nil, fmt.Errorf("maxTokens %v is not a positive finite number", maxTokens)
	case !(tokenRatio > 0) || math.IsInf(tokenRatio, 0):
		return nil, fmt.Errorf("tokenRatio %v is not a positive finite number", tokenRatio)
	case tokenRatio > maxTokens:
		return nil, fmt.Errorf("tokenRatio %v is above maxTokens %v", tokenRatio, maxTokens)
	}
	return guard.NewBudget(guard.BudgetOptions{MaxTokens: maxTokens, TokenRatio: tokenRatio})
}
