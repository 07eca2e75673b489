package retryconfig

import (
	"strings"
	"time"

	"github.com/stormguard/retry/guard"
)

// budgetParams are the fields of a member of "budgets", those of
// guard.BudgetOptions but its Clock: a token bucket's (maxTokens,
// tokenRatio) or a ratio budget's (ratio, minPerSecond, ttl). A field left
// out is zero, which stands for guard's default.
type budgetParams struct {
	maxTokens, tokenRatio float64
	ratio, minPerSecond   float64
	ttl                   time.Duration
}

func (b budgetParams) options() guard.BudgetOptions {
	return guard.BudgetOptions{MaxTokens: b.maxTokens, TokenRatio: b.tokenRatio, Ratio: b.ratio, MinPerSecond: b.minPerSecond, TTL: b.ttl}
}

// budgetFields set each field of budgetParams from its value.
var budgetFields = map[string]func(*budgetParams, *value) error{
	"maxTokens":    func(b *budgetParams, v *value) (err error) { b.maxTokens, err = number(v); return err },
	"tokenRatio":   func(b *budgetParams, v *value) (err error) { b.tokenRatio, err = number(v); return err },
	"ratio":        func(b *budgetParams, v *value) (err error) { b.ratio, err = number(v); return err },
	"minPerSecond": func(b *budgetParams, v *value) (err error) { b.minPerSecond, err = number(v); return err },
	"ttl":          func(b *budgetParams, v *value) (err error) { b.ttl, err = durationJSON(v); return err },
}

// budgetKind reads the members of "budgets". A budget with ratio,
// minPerSecond or ttl is a ratio budget, any other a token bucket; the
// two kinds' fields do not mix, which guard.NewBudget checks.
var budgetKind = guardKind[budgetParams, guard.Budget]{
	name: "budgets",
	one:  "budget",
	set: func(b *budgetParams, key string, v *value) error {
		set, ok := budgetFields[key]
		if !ok {
			return errorf("unknown field (want maxTokens, tokenRatio, ratio, minPerSecond or ttl)")
		}
		var one budgetParams
		if err := set(&one, v); err != nil {
			return err
		}
		switch key {
		case "maxTokens", "tokenRatio":
			// gRFC A6's retryThrottling has no default: a zero written is
			// an error. The other checks are the whole budget's, below.
			if one == (budgetParams{}) {
				return errorf("0 is not a positive finite number")
			}
		default:
			// A ratio budget's field alone, checked by guard as a
			// throttle's is.
			if one == (budgetParams{}) {
				return errZeroDefault
			}
			if _, err := guard.NewBudget(one.options()); err != nil {
				return optionError(err, "BudgetOptions."+budgetGoName(key))
			}
		}
		return set(b, v)
	},
	build: newBudget,
}

// budgetGoName is the option of guard.BudgetOptions a field stands for.
func budgetGoName(field string) string {
	if field == "ttl" {
		return "TTL"
	}
	return goName(field)
}

func newBudget(b budgetParams) (*guard.Budget, error) {
	nb, err := guard.NewBudget(b.options())
	if err != nil {
		return nil, errorf("%s", budgetWords.Replace(strings.TrimPrefix(err.Error(), guard.ErrInvalidOptions.Error()+": ")))
	}
	return nb, nil
}

// budgetWords names guard.BudgetOptions' fields as a document does.
var budgetWords = strings.NewReplacer("BudgetOptions.MaxTokens", "maxTokens", "BudgetOptions.TokenRatio", "tokenRatio",
	"MaxTokens", "maxTokens", "TokenRatio", "tokenRatio", "Ratio", "ratio", "MinPerSecond", "minPerSecond", "TTL", "ttl")

// appendBudget writes a member of "budgets", its fields at zero left out.
func appendBudget(b []byte, p budgetParams) []byte {
	w := fields{b: append(b, '{')}
	w.float("maxTokens", p.maxTokens)
	w.float("tokenRatio", p.tokenRatio)
	w.float("ratio", p.ratio)
	w.float("minPerSecond", p.minPerSecond)
	w.duration("ttl", p.ttl)
	return append(w.b, '}')
}
