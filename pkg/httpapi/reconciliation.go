package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// Reconciliation (CONTRACT §14): what landed in the platform's tables
// beside what was staged, and each account's landed_digest (computed on
// read: the creation path does not pay for it).

// ReconciliationStore is what reconciliation and landed_digest need
// (postgres/reconciliation.go, landed.go).
type ReconciliationStore interface {
	Reconcile(ctx context.Context, supplierID int64, f postgres.ReconciliationFilter) (postgres.Reconciliation, error)
	EachLanded(ctx context.Context, supplierID int64, f postgres.ReconciliationFilter, fn func(postgres.LandedStaged) error) error
	LandedDigests(ctx context.Context, platformNumbers []string) (map[string]string, error)
}

var reconcileParamNames = []string{"import_supplier", "job", "since"}

// reconcileParams reads import_supplier and the optional job or since.
func (s *Server) reconcileParams(c *gin.Context) (int64, postgres.ReconciliationFilter, bool) {
	var f postgres.ReconciliationFilter
	if s.deps.Reconciliation == nil {
		abortWithError(c, dataimport.Errorf(dataimport.CodeNotFound, "Not found."))
		return 0, f, false
	}
	var errs []dataimport.FieldError
	bad := func(attr, code, detail string) {
		errs = append(errs, dataimport.FieldError{Attr: attr, Code: code, Detail: detail})
	}
	errs = append(errs, queryNameProblems(c, reconcileParamNames)...)
	supplier := c.Query("import_supplier")
	if supplier == "" {
		bad("import_supplier", dataimport.CodeRequired, "import_supplier is required.")
	}
	if v, ok := c.GetQuery("job"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if !failureNumberRe.MatchString(v) || err != nil || n < 1 {
			bad("job", dataimport.CodeInvalid, "job must be a job id.")
		}
		f.JobID = n
	}
	if v, ok := c.GetQuery("since"); ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			bad("since", dataimport.CodeInvalidDatetime, "since must be a date-time such as 2026-01-31T09:00:00Z.")
		}
		f.Since = &t
	}
	if f.JobID != 0 && f.Since != nil {
		bad("since", dataimport.CodeInvalid, "Give job or since, not both.")
	}
	if len(errs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", errs)
		return 0, f, false
	}
	ctx := c.Request.Context()
	org := principal(c).OrganisationID
	sup, err := s.deps.Store.SupplierForOrganisation(ctx, org, supplier)
	if err != nil {
		if dataimport.ErrorCode(err) == dataimport.CodeSupplierNotFound {
			err = dataimport.Errorf(dataimport.CodeNotFound, "Import supplier %q does not exist.", supplier)
		}
		abortWithError(c, err)
		return 0, f, false
	}
	if f.JobID != 0 {
		// Another organisation's job, or one of another supplier, is no job here.
		v, err := s.deps.Jobs.Job(ctx, org, f.JobID)
		if err == nil && v.SupplierID != sup.ID {
			err = postgres.ErrJobNotFound
		}
		if err != nil {
			abortWithError(c, err)
			return 0, f, false
		}
	}
	return sup.ID, f, true
}

// reconciliationBody is GET /reconciliation/'s answer: the totals of both
// sides as decimal strings, then the first differences, account by
// account; more_differences says how many more there are.
type reconciliationBody struct {
	Landed            map[string]string             `json:"landed"`
	Staged            map[string]string             `json:"staged"`
	Differences       []dataimport.FigureDifference `json:"differences"`
	DifferingAccounts int64                         `json:"differing_accounts"`
	MoreDifferences   int64                         `json:"more_differences"`
}

// reconciliation serves GET /reconciliation/?import_supplier=[&job=|&since=].
func (s *Server) reconciliation(c *gin.Context) {
	supplierID, f, ok := s.reconcileParams(c)
	if !ok {
		return
	}
	r, err := s.deps.Reconciliation.Reconcile(c.Request.Context(), supplierID, f)
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusOK, reconciliationBody{Landed: r.Landed.Strings(), Staged: r.Staged.Strings(), Differences: r.Differences,
		DifferingAccounts: r.DifferingAccounts, MoreDifferences: r.MoreDifferences})
}

// landedLine is one account of GET /reconciliation/accounts/.
type landedLine struct {
	ExternalAccountNumber string            `json:"external_account_number"`
	PlatformAccountNumber string            `json:"platform_account_number"`
	LandedDigest          string            `json:"landed_digest"`
	Figures               map[string]string `json:"figures"`
}

// landedAccounts serves GET /reconciliation/accounts/: every account that
// landed, as NDJSON, with its landed_digest and its figures as read back
// from the platform's tables (what `migrator reconcile` compares a source
// export with). Streamed a page at a time: constant memory for any size.
func (s *Server) landedAccounts(c *gin.Context) {
	supplierID, f, ok := s.reconcileParams(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	c.Header("Content-Type", "application/x-ndjson")
	c.Status(http.StatusOK)
	w := bufio.NewWriterSize(c.Writer, 32<<10)
	enc := json.NewEncoder(w)
	err := s.deps.Reconciliation.EachLanded(ctx, supplierID, f, func(ls postgres.LandedStaged) error {
		return enc.Encode(landedLine{ExternalAccountNumber: ls.ExternalAccountNumber, PlatformAccountNumber: ls.PlatformAccountNumber,
			LandedDigest: ls.Digest, Figures: ls.LandedFigures.Strings()})
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		logger(c).WarnContext(ctx, "landed accounts stream stopped", "err", err.Error())
		c.Abort()
	}
}

// landedDigest is the landed_digest of a created account (nil: not
// created, or no reconciliation store).
func (s *Server) landedDigest(ctx context.Context, p postgres.StatusProcess) (*string, error) {
	platformNumber := p.PlatformAccountNumber
	if platformNumber == "" || s.deps.Reconciliation == nil {
		return nil, nil
	}
	if p.KeptDigest != nil { // read with the process
		return p.KeptDigest, nil
	}
	m, err := s.deps.Reconciliation.LandedDigests(ctx, []string{platformNumber})
	if err != nil {
		return nil, err
	}
	if d, ok := m[platformNumber]; ok {
		return &d, nil
	}
	return nil, nil
}

// digestBatch is how many job results share one read of their accounts.
const digestBatch = 500

// withLandedDigests wraps a job results writer: records are held a batch
// at a time, their created accounts read back in one statement, and each
// written with its landed_digest. flush writes what is held.
func (s *Server) withLandedDigests(ctx context.Context, write func(jobResult) error) (add func(dataimport.JobRecord) error, flush func() error) {
	var held []jobResult
	flush = func() error {
		var nums []string
		for _, r := range held {
			if r.PlatformAccountNumber != nil && r.Outcome == dataimport.OutcomeCreated {
				nums = append(nums, *r.PlatformAccountNumber)
			}
		}
		if len(nums) > 0 && s.deps.Reconciliation != nil {
			m, err := s.deps.Reconciliation.LandedDigests(ctx, nums)
			if err != nil {
				return fmt.Errorf("job results: landed digests: %w", err)
			}
			for i := range held {
				if p := held[i].PlatformAccountNumber; p != nil && held[i].Outcome == dataimport.OutcomeCreated {
					if d, ok := m[*p]; ok {
						held[i].LandedDigest = &d
					}
				}
			}
		}
		for _, r := range held {
			if err := write(r); err != nil {
				return err
			}
		}
		held = held[:0]
		return nil
	}
	add = func(r dataimport.JobRecord) error {
		held = append(held, jobResult{JobRecord: r})
		if len(held) >= digestBatch {
			return flush()
		}
		return nil
	}
	return add, flush
}

// jobResult is a job's line in its NDJSON results: its record and, once
// its account was created, the account's landed_digest.
type jobResult struct {
	dataimport.JobRecord
	LandedDigest *string `json:"landed_digest"`
}
