module github.com/gridshift/dataimport/sdk/go

go 1.24.0

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/google/uuid v1.6.0
	github.com/oapi-codegen/runtime v1.8.0
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1
)

require github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
