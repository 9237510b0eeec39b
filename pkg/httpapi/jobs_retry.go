package httpapi

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// retryParamNames are the query parameters of POST /jobs/<id>/retry/.
var retryParamNames = []string{"code", "attr"}

// retryJob serves POST /jobs/<id>/retry/[?code=&attr=] (CONTRACT §13): the
// job's failed lines whose field errors match go back to be run again from
// their staged payloads, through the job's own pipeline (the cluster-wide
// cap, once per account, exact counters); the job is PROCESSING again
// until they end. 202 {retried: N}; nothing matching is {retried: 0}; a
// job RECEIVING, CANCELLED or FAILED is 409 job_not_retryable.
func (s *Server) retryJob(c *gin.Context) {
	id, ok := s.jobParam(c)
	if !ok {
		return
	}
	var errs []dataimport.FieldError
	values := c.Request.URL.Query()
	for _, name := range slices.Sorted(maps.Keys(values)) {
		switch {
		case !slices.Contains(retryParamNames, name):
			errs = append(errs, dataimport.FieldError{Attr: name, Code: dataimport.CodeUnknownField,
				Detail: "Unknown query parameter; this endpoint takes code and attr."})
		case len(values[name]) > 1:
			errs = append(errs, dataimport.FieldError{Attr: name, Code: dataimport.CodeInvalid, Detail: name + " may be given once."})
		case len(values.Get(name)) > 200 || strings.ContainsRune(values.Get(name), 0):
			errs = append(errs, dataimport.FieldError{Attr: name, Code: dataimport.CodeInvalid, Detail: name + " must be at most 200 characters."})
		}
	}
	if len(errs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", errs)
		return
	}
	ctx := c.Request.Context()
	r, err := s.deps.Jobs.RetryJob(ctx, principal(c).OrganisationID, id, c.Query("code"), c.Query("attr"))
	if err != nil {
		abortWithError(c, err)
		return
	}
	for _, t := range r.Tasks {
		if err := s.deps.Creator.Enqueue(ctx, t); err != nil {
			// The lines are back in the job, durably: the reconciler wakes it.
			logger(c).WarnContext(ctx, "retried job not woken; the reconciler will", "job_id", id, "err", err.Error())
		}
	}
	c.JSON(http.StatusAccepted, dataimport.JobRetried{Retried: r.N})
}
