package httpapi

import (
	"errors"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// accountOrLine resolves the account a status path names: its import
// process, or, when none is staged yet, a waiting line of an accepted bulk
// job, so every account of a job answers from the 202 on rather than 404
// until a worker round stages it. The found process (the hot path) costs
// one query as before; only a miss probes the live jobs.
func (s *Server) accountOrLine(c *gin.Context) (postgres.StatusProcess, *postgres.AcceptedLine, error) {
	ctx, org, sup, ext := c.Request.Context(), principal(c).OrganisationID, c.Param("supplier"), c.Param("external")
	p, err := s.deps.Store.ProcessForOrganisation(ctx, org, sup, ext)
	if err == nil && (p.StagedVersion != 0 || p.Imported()) {
		return p, nil, nil
	}
	if err != nil && !errors.Is(err, postgres.ErrProcessNotFound) {
		return p, nil, err
	}
	look, lerr := s.deps.Store.AcceptedJobLine(ctx, org, sup, ext)
	if lerr != nil {
		return p, nil, lerr
	}
	if look.Staged { // the worker staged it between the two reads
		if p, err = s.deps.Store.ProcessForOrganisation(ctx, org, sup, ext); err == nil && (p.StagedVersion != 0 || p.Imported()) {
			return p, nil, nil
		}
	}
	if look.Found {
		return p, &look.Line, nil
	}
	// No process, or one only marked skipped by an operator: nothing a
	// partner staged. The same 404 as an unknown supplier.
	return p, nil, asNotFound(dataimport.ErrSupplierNotFound(""))
}
