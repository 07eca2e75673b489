module github.com/stormguard/retry/bench/pgriver

go 1.26.0

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/riverqueue/river v0.51.2
	github.com/riverqueue/river/riverdriver/riverpgxv5 v0.51.2
	github.com/riverqueue/river/rivertype v0.51.2
	github.com/stormguard/retry v0.2.0
	github.com/stormguard/retry/outbox/pgjournal v0.2.0
)
