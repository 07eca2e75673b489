module github.com/stormguard/retry

go 1.25

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	go.yaml.in/yaml/v3 v3.0.5
)
