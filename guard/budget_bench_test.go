package guard_test

import (
	"context"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// BenchmarkBudget is what each kind of Budget costs where it is asked: a
// success and a first attempt (the healthy path, which every call takes),
// and the check of a retry. The parallel rows run on every P at once, to
// show the cost of the one shared counter under contention. See
// docs/budgets.md for the numbers.
func BenchmarkBudget(b *testing.B) {
	token, err := guard.NewBudget(guard.BudgetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ratio, err := guard.NewBudget(guard.BudgetOptions{Ratio: 0.2, MinPerSecond: 10, TTL: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		b    *guard.Budget
		f    func(*guard.Budget)
	}{
		{"token/success", token, func(b *guard.Budget) { b.Started(); b.Succeeded() }},
		{"ratio/success", ratio, func(b *guard.Budget) { b.Started(); b.Succeeded() }},
		{"token/allow-retry", token, func(b *guard.Budget) { b.AllowRetry() }},
		{"ratio/allow-retry", ratio, func(b *guard.Budget) { b.AllowRetry() }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.f(bc.b)
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					bc.f(bc.b)
				}
			})
		})
	}
}

// BenchmarkBudgetFirstSuccess is what each kind of Budget adds to a Do
// whose first attempt succeeds: compare each row with "none".
func BenchmarkBudgetFirstSuccess(b *testing.B) {
	ctx := context.Background()
	token, err := guard.NewBudget(guard.BudgetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ratio, err := guard.NewBudget(guard.BudgetOptions{Ratio: 0.2})
	if err != nil {
		b.Fatal(err)
	}
	op := func(context.Context) error { return nil }
	for _, bc := range []struct {
		name string
		p    retry.Policy
	}{
		{"none", retry.Policy{}},
		{"token", retry.Policy{Budget: token}},
		{"ratio", retry.Policy{Budget: ratio}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := retry.Do(ctx, op, bc.p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
