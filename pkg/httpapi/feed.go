package httpapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// The pull feed (CONTRACT §9): the caller's organisation's published events
// in commit order, for partners without a public webhook endpoint.

// MaxFeedWait bounds a long-poll (wait=…), well under common proxy timeouts.
const MaxFeedWait = 30 * time.Second

// feedLatest, given as after, starts at the current end of the feed.
const feedLatest = "latest"

// feedParamNames are the query parameters the feed accepts.
var feedParamNames = []string{"after", "limit", "type", "import_supplier", "wait"}

var feedLimitRe = regexp.MustCompile(`^[0-9]{1,7}$`)

type feedQuery struct {
	after    int64
	latest   bool
	limit    int
	types    []string
	supplier string
	wait     time.Duration
}

// feedParams reads and checks the query, reporting every problem at once.
func feedParams(c *gin.Context) (feedQuery, []dataimport.FieldError) {
	q := feedQuery{limit: postgres.DefaultFeedPage}
	var errs []dataimport.FieldError
	bad := func(attr, code, detail string) {
		errs = append(errs, dataimport.FieldError{Attr: attr, Code: code, Detail: detail})
	}
	values := c.Request.URL.Query()
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if !slices.Contains(feedParamNames, name) {
			bad(name, dataimport.CodeUnknownField, "Unknown query parameter; the feed takes "+strings.Join(feedParamNames, ", ")+".")
			continue
		}
		if name != "type" && len(values[name]) > 1 {
			bad(name, dataimport.CodeInvalid, name+" may be given once.")
		}
	}
	if v, ok := c.GetQuery("after"); ok {
		switch pos, valid := dataimport.ParseFeedCursor(v); {
		case v == "":
		case v == feedLatest:
			q.latest = true
		case valid:
			q.after = pos
		default:
			bad("after", dataimport.CodeInvalid, "after must be the next cursor of an earlier answer, or latest.")
		}
	}
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if !feedLimitRe.MatchString(v) || err != nil || n < 1 || n > postgres.MaxFeedPage {
			bad("limit", dataimport.CodeInvalid, fmt.Sprintf("limit must be a whole number from 1 to %d.", postgres.MaxFeedPage))
		}
		q.limit = n
	}
	for _, t := range c.QueryArray("type") {
		if _, ok := dataimport.PublishedEvent(t); !ok {
			bad("type", dataimport.CodeInvalidChoice, fmt.Sprintf("%q is not a published event type.", t))
			continue
		}
		if !slices.Contains(q.types, t) {
			q.types = append(q.types, t)
		}
	}
	if v, ok := c.GetQuery("import_supplier"); ok {
		if v == "" {
			bad("import_supplier", dataimport.CodeBlank, "import_supplier may not be blank.")
		}
		q.supplier = v
	}
	if v, ok := c.GetQuery("wait"); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxFeedWait {
			bad("wait", dataimport.CodeInvalid, fmt.Sprintf("wait must be a duration such as 20s, from 0s to %s.", MaxFeedWait))
		}
		q.wait = d
	}
	return q, errs
}

// feedBody is the feed's answer.
type feedBody struct {
	Events []dataimport.FeedEvent `json:"events"`
	Next   string                 `json:"next"`
}

// eventFeed serves GET /v1/data-import/events/. Without wait it answers at
// once; with wait and nothing to return, it waits for the relay's NOTIFY
// (one LISTEN per process, postgres.WatchFeed) or for the wait to end, and
// answers as soon as an event the caller may see is numbered.
func (s *Server) eventFeed(c *gin.Context) {
	q, errs := feedParams(c)
	if len(errs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", errs)
		return
	}
	ctx := c.Request.Context()
	org := principal(c).OrganisationID
	if q.supplier != "" {
		// Not granted is answered exactly as unknown (CONTRACT §3).
		if _, err := s.deps.Store.SupplierForOrganisation(ctx, org, q.supplier); err != nil {
			if dataimport.ErrorCode(err) == dataimport.CodeSupplierNotFound {
				err = dataimport.Errorf(dataimport.CodeNotFound, "Import supplier %q does not exist.", q.supplier)
			}
			abortWithError(c, err)
			return
		}
	}
	if q.latest {
		tail, err := s.deps.Store.FeedTail(ctx)
		if err != nil {
			abortWithError(c, err)
			return
		}
		q.after = tail
	}
	waitCtx, cancel := context.WithTimeout(ctx, q.wait)
	defer cancel()
	c.Header("Cache-Control", "no-store")
	for {
		gen := s.deps.Store.FeedGeneration() // before the read: a wake-up after it is not lost
		events, next, err := s.deps.Store.FeedPage(ctx, org, q.after, q.limit, q.types, q.supplier)
		if err != nil {
			abortWithError(c, err)
			return
		}
		if len(events) > 0 || q.wait == 0 {
			c.JSON(http.StatusOK, feedBody{Events: events, Next: dataimport.FeedCursor(next)})
			return
		}
		if err := s.deps.Store.WaitFeed(waitCtx, gen); err != nil {
			if ctx.Err() != nil {
				abortWithError(c, fmt.Errorf("feed long-poll: %w", ctx.Err()))
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, postgres.ErrFeedWaitStopped) {
				abortWithError(c, err)
				return
			}
			// The wait is over (or the server is draining): nothing new.
			c.JSON(http.StatusOK, feedBody{Events: events, Next: dataimport.FeedCursor(q.after)})
			return
		}
	}
}
