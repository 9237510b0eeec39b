// Package jobs holds the asynq task handlers the worker runs. Each task type
// has a typed payload (pkg/queue) and a handler that depends on interfaces
// only, so it can be tested without the network.
package jobs

import (
	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/pkg/queue"
)

// Deps are the handlers to register.
type Deps struct {
	CreateAccount asynq.Handler
	WelcomeEmail  asynq.Handler
	BulkJob       asynq.Handler // nil: bulk jobs are not run here
}

// NewMux registers every task handler.
func NewMux(d Deps) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	mux.Handle(queue.TypeCreateAccount, d.CreateAccount)
	if d.BulkJob != nil {
		mux.Handle(queue.TypeBulkJob, d.BulkJob)
	}
	if d.WelcomeEmail != nil {
		mux.Handle(queue.TypeWelcomeEmail, d.WelcomeEmail)
	}
	return mux
}
