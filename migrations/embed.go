// Package migrations holds the numbered SQL migrations (pressly/goose format),
// embedded so every binary carries the schema it was built for.
package migrations

import "embed"

// FS is the set of *.sql migrations, applied in file-name order.
//
//go:embed *.sql
var FS embed.FS
