package retryconfig

import (
	"strings"

	"github.com/stormguard/retry/guard"
)

// budgetParams are the fields of a member of "budgets": the arguments of
// retry.NewBudget.
type budgetParams struct {
	maxTokens, tokenRatio float64
}

// budgetKind reads the members of "budgets". A field left out has the
// default of the zero guard.Budget, which NewBudget cannot be given as
// zero.
var budgetKind = guardKind[budgetParams, guard.Budget]{
	name: "budgets",
	one:  "budget",
	zero: budgetParams{maxTokens: 10, tokenRatio: 0.1},
	set: func(b *budgetParams, key string, v *value) (err error) {
		switch key {
		case "maxTokens":
			b.maxTokens, err = number(v)
		case "tokenRatio":
			b.tokenRatio, err = number(v)
		default:
			err = errorf("unknown field (want maxTokens or tokenRatio)")
		}
		return err
	},
	build: newBudget,
}

func newBudget(b budgetParams) (*guard.Budget, error) {
	// A document gives both numbers or leaves them out (budgetKind.zero):
	// a zero written is an error, not guard.BudgetOptions' default, as
	// gRFC A6's retryThrottling has none. The other rules are guard's.
	switch {
	case b.maxTokens == 0:
		return nil, errorf("maxTokens 0 is not a positive finite number")
	case b.tokenRatio == 0:
		return nil, errorf("tokenRatio 0 is not a positive finite number")
	}
	nb, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: b.maxTokens, TokenRatio: b.tokenRatio})
	if err != nil {
		return nil, errorf("%s", budgetWords.Replace(strings.TrimPrefix(err.Error(), guard.ErrInvalidOptions.Error()+": ")))
	}
	return nb, nil
}

// budgetWords names guard.BudgetOptions' fields as a document does.
var budgetWords = strings.NewReplacer("BudgetOptions.MaxTokens", "maxTokens", "BudgetOptions.TokenRatio", "tokenRatio", "MaxTokens", "maxTokens")

// appendBudget writes a member of "budgets", both fields always.
func appendBudget(b []byte, p budgetParams) []byte {
	w := fields{b: append(b, '{')}
	w.key("maxTokens")
	w.b = appendFloat(w.b, p.maxTokens)
	w.key("tokenRatio")
	w.b = appendFloat(w.b, p.tokenRatio)
	return append(w.b, '}')
}
