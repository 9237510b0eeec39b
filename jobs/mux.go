// Package jobs holds the asynq task handlers the worker runs. Each task type
// has a typed payload and a handler that depends on interfaces only, so it
// can be tested without the network.
package jobs

import (
	"github.com/hibiken/asynq"
)

// Deps are what handlers need; fields are added as task types are.
type Deps struct{}

// NewMux registers every task handler.
func NewMux(Deps) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	return mux
}
