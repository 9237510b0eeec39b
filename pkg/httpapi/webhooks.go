package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/webhook"
)

// Partner self-serve webhooks (CONTRACT §15): the caller's organisation's
// endpoints only (another's is a 404), the same SSRF guard and delivery as
// the operator's, every change audited under the key that made it.

// WebhookStore is what the webhook endpoints need from Postgres.
type WebhookStore interface {
	CreateWebhookEndpoint(ctx context.Context, n postgres.NewWebhookEndpoint) (postgres.WebhookEndpoint, error)
	OrgWebhookEndpoints(ctx context.Context, orgID int64) ([]postgres.WebhookEndpoint, error)
	OrgWebhookEndpoint(ctx context.Context, orgID, id int64) (postgres.WebhookEndpoint, error)
	WebhookEndpointHealth(ctx context.Context, id int64) (postgres.WebhookHealthRow, error)
	WebhookLog(ctx context.Context, endpointID int64, limit int) ([]postgres.WebhookAttempt, error)
	UpdateWebhookEndpoint(ctx context.Context, id int64, p postgres.WebhookPatch) error
	RotateWebhookSecret(ctx context.Context, id int64, secret string, overlap time.Duration) error
	WebhookSecrets(ctx context.Context, id int64) ([]string, error)
}

// WebhookSender sends a test event (webhook.Sender).
type WebhookSender interface {
	Send(ctx context.Context, url string, secrets []string, msgID string, body []byte) webhook.Outcome
}

// webhookTestType is the event a partner's test request sends.
const webhookTestType = "webhook.test-v1"

// maxWebhookAttemptsPage bounds GET …/attempts/.
const maxWebhookAttemptsPage = 100

type webhookBody struct {
	ID                      int64                `json:"id"`
	URL                     string               `json:"url"`
	Description             *string              `json:"description"`
	EventTypes              []string             `json:"event_types"`
	Enabled                 bool                 `json:"enabled"`
	DisabledReason          *string              `json:"disabled_reason"`
	CreatedAt               dataimport.DateTime  `json:"created_at"`
	UpdatedAt               dataimport.DateTime  `json:"updated_at"`
	PreviousSecretExpiresAt *dataimport.DateTime `json:"previous_secret_expires_at"`
	Secret                  *string              `json:"secret,omitempty"` // only when created or rotated
	Health                  *webhookHealth       `json:"health,omitempty"`
	RecentAttempts          []webhookAttempt     `json:"recent_attempts,omitempty"`
}

type webhookHealth struct {
	LastDeliveredAt *dataimport.DateTime `json:"last_delivered_at"`
	Retrying        int64                `json:"retrying"`
	Failed          int64                `json:"failed"`
}

type webhookAttempt struct {
	At              dataimport.DateTime `json:"at"`
	EventID         string              `json:"event_id"`
	Attempt         int                 `json:"attempt"`
	Status          *int                `json:"status"`
	LatencyMS       int64               `json:"latency_ms"`
	Error           *string             `json:"error"`
	ResponseExcerpt *string             `json:"response_excerpt"`
	DeliveryState   string              `json:"delivery_state"`
}

func newWebhookBody(e postgres.WebhookEndpoint) webhookBody {
	b := webhookBody{ID: e.ID, URL: e.URL, Description: e.Description, EventTypes: e.EventTypes, Enabled: e.Enabled,
		DisabledReason: e.DisabledReason, CreatedAt: dataimport.NewDateTime(e.CreatedAt), UpdatedAt: dataimport.NewDateTime(e.UpdatedAt),
		PreviousSecretExpiresAt: wireTimePtr(e.PreviousSecretExpiresAt)}
	if b.EventTypes == nil {
		b.EventTypes = []string{}
	}
	return b
}

func newWebhookAttempts(log []postgres.WebhookAttempt) []webhookAttempt {
	out := make([]webhookAttempt, len(log))
	for i, a := range log {
		out[i] = webhookAttempt{At: dataimport.NewDateTime(a.At), EventID: a.EventID, Attempt: a.Attempt, Status: a.Status,
			LatencyMS: a.LatencyMS, Error: a.Error, ResponseExcerpt: a.Excerpt, DeliveryState: a.State}
	}
	return out
}

// webhookRequest is the body of POST /webhooks/ and PATCH /webhooks/<id>/.
type webhookRequest struct {
	URL         *string  `json:"url"`
	EventTypes  []string `json:"event_types" dataimport:"max=32"` // nil: absent; [] : every type
	Description *string  `json:"description"`
	Enabled     *bool    `json:"enabled"`
}

// check validates the fields given; create requires url.
func (s *Server) checkWebhookRequest(ctx context.Context, r webhookRequest, create bool) []dataimport.FieldError {
	var errs []dataimport.FieldError
	switch {
	case r.URL == nil && create:
		errs = append(errs, dataimport.FieldError{Attr: "url", Code: dataimport.CodeRequired, Detail: "This field is required."})
	case r.URL != nil:
		if _, err := s.deps.WebhookGuard.CheckURL(ctx, *r.URL); err != nil {
			errs = append(errs, dataimport.FieldError{Attr: "url", Code: dataimport.CodeInvalid, Detail: err.Error()})
		}
	}
	if r.EventTypes != nil {
		for i, t := range r.EventTypes {
			if _, ok := dataimport.PublishedEvent(t); !ok {
				errs = append(errs, dataimport.FieldError{Attr: "event_types." + strconv.Itoa(i), Code: dataimport.CodeInvalidChoice,
					Detail: fmt.Sprintf("%q is not a published event type.", t)})
			}
		}
	}
	if r.Description != nil {
		errs = append(errs, dataimport.CheckWebhookDescription(*r.Description)...)
	}
	if create && r.Enabled != nil {
		errs = append(errs, dataimport.FieldError{Attr: "enabled", Code: dataimport.CodeUnknownField, Detail: "An endpoint is enabled when registered."})
	}
	return errs
}

func (s *Server) bindWebhookRequest(c *gin.Context, create bool) (webhookRequest, bool) {
	var r webhookRequest
	errs, err := dataimport.DecodeStrict(requestBody(c), &r)
	if err != nil {
		abortWithError(c, err)
		return r, false
	}
	errs = append(errs, s.checkWebhookRequest(c.Request.Context(), r, create)...)
	if len(errs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Invalid webhook endpoint.", errs)
		return r, false
	}
	return r, true
}

// partnerCtx is the request's context with the audit actor of its key.
func partnerCtx(c *gin.Context) context.Context {
	return postgres.WithActor(c.Request.Context(), postgres.Actor("apikey:"+principal(c).KeyPrefix))
}

// createWebhook serves POST /webhooks/: 201 with the secret, shown once.
func (s *Server) createWebhook(c *gin.Context) {
	r, ok := s.bindWebhookRequest(c, true)
	if !ok {
		return
	}
	secret, ok := newWebhookSecret(c)
	if !ok {
		return
	}
	n := postgres.NewWebhookEndpoint{OrganisationID: principal(c).OrganisationID, URL: *r.URL, Secret: secret}
	n.EventTypes = r.EventTypes
	if r.Description != nil {
		n.Description = *r.Description
	}
	e, err := s.deps.Webhooks.CreateWebhookEndpoint(partnerCtx(c), n)
	if err != nil {
		abortWithError(c, err)
		return
	}
	b := newWebhookBody(e)
	b.Secret = &secret
	c.Header("Location", webhookURL(e.ID))
	c.JSON(http.StatusCreated, b)
}

// listWebhooks serves GET /webhooks/: the organisation's endpoints.
func (s *Server) listWebhooks(c *gin.Context) {
	es, err := s.deps.Webhooks.OrgWebhookEndpoints(c.Request.Context(), principal(c).OrganisationID)
	if err != nil {
		abortWithError(c, err)
		return
	}
	out := make([]webhookBody, len(es))
	for i, e := range es {
		out[i] = newWebhookBody(e)
	}
	c.JSON(http.StatusOK, out)
}

// orgWebhook reads the <id> endpoint of the caller's organisation, or
// answers 404.
func (s *Server) orgWebhook(c *gin.Context) (postgres.WebhookEndpoint, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		renderError(c, dataimport.Errorf(dataimport.CodeNotFound, "Webhook endpoint %q does not exist.", c.Param("id")))
		return postgres.WebhookEndpoint{}, false
	}
	e, err := s.deps.Webhooks.OrgWebhookEndpoint(c.Request.Context(), principal(c).OrganisationID, id)
	if err != nil {
		abortWithError(c, err)
		return e, false
	}
	return e, true
}

// showWebhook serves GET /webhooks/<id>/: the endpoint, its health and its
// last attempts.
func (s *Server) showWebhook(c *gin.Context) {
	e, ok := s.orgWebhook(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	h, err := s.deps.Webhooks.WebhookEndpointHealth(ctx, e.ID)
	if err != nil {
		abortWithError(c, err)
		return
	}
	log, err := s.deps.Webhooks.WebhookLog(ctx, e.ID, 10)
	if err != nil {
		abortWithError(c, err)
		return
	}
	b := newWebhookBody(e)
	b.Health = &webhookHealth{LastDeliveredAt: wireTimePtr(h.LastDelivery), Retrying: h.Retrying, Failed: h.Failed}
	b.RecentAttempts = newWebhookAttempts(log)
	c.JSON(http.StatusOK, b)
}

// patchWebhook serves PATCH /webhooks/<id>/: url, event_types, enabled,
// description; fields left out stay.
func (s *Server) patchWebhook(c *gin.Context) {
	e, ok := s.orgWebhook(c)
	if !ok {
		return
	}
	r, ok := s.bindWebhookRequest(c, false)
	if !ok {
		return
	}
	if err := s.deps.Webhooks.UpdateWebhookEndpoint(partnerCtx(c), e.ID, postgres.WebhookPatch{
		URL: r.URL, EventTypes: eventTypesPatch(r.EventTypes), Enabled: r.Enabled, Description: r.Description}); err != nil {
		abortWithError(c, err)
		return
	}
	if e, ok = s.orgWebhook(c); ok {
		c.JSON(http.StatusOK, newWebhookBody(e))
	}
}

// rotateWebhookSecret serves POST /webhooks/<id>/rotate-secret/: a new
// secret (shown once); the old one keeps signing beside it for
// webhook.RotationOverlap.
func (s *Server) rotateWebhookSecret(c *gin.Context) {
	e, ok := s.orgWebhook(c)
	if !ok {
		return
	}
	secret, ok := newWebhookSecret(c)
	if !ok {
		return
	}
	if err := s.deps.Webhooks.RotateWebhookSecret(partnerCtx(c), e.ID, secret, webhook.RotationOverlap); err != nil {
		abortWithError(c, err)
		return
	}
	if e, ok = s.orgWebhook(c); ok {
		b := newWebhookBody(e)
		b.Secret = &secret
		c.JSON(http.StatusOK, b)
	}
}

// webhookTestEvent is what POST …/test/ sends: the envelope of every event,
// with a type no feed carries.
type webhookTestEvent struct {
	ID         string              `json:"id"`
	Type       string              `json:"type"`
	OccurredAt dataimport.DateTime `json:"occurred_at"`
	Data       map[string]any      `json:"data"`
}

// testWebhook serves POST /webhooks/<id>/test/: a webhook.test-v1 event sent
// now, signed like every delivery (with both secrets during an overlap),
// answered with the receiver's outcome. It is not retried and not logged
// as a delivery: the partner sees the answer here.
func (s *Server) testWebhook(c *gin.Context) {
	e, ok := s.orgWebhook(c)
	if !ok {
		return
	}
	if s.deps.WebhookSender == nil {
		abortWithError(c, errors.New("webhook sender not configured"))
		return
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	ev := webhookTestEvent{ID: "test_" + hex.EncodeToString(rnd[:]), Type: webhookTestType,
		OccurredAt: dataimport.NewDateTime(time.Now()), Data: map[string]any{"webhook_id": e.ID}}
	body, err := json.Marshal(ev)
	if err != nil {
		abortWithError(c, err)
		return
	}
	secrets, err := s.deps.Webhooks.WebhookSecrets(c.Request.Context(), e.ID)
	if err != nil {
		abortWithError(c, err)
		return
	}
	o := s.deps.WebhookSender.Send(c.Request.Context(), e.URL, secrets, ev.ID, body)
	var status *int
	if o.Status != 0 {
		status = &o.Status
	}
	var errText *string
	if t := o.ErrorText(); t != "" {
		errText = &t
	}
	c.JSON(http.StatusOK, gin.H{"event_id": ev.ID, "type": webhookTestType, "delivered": o.Delivered(), "status": status,
		"latency_ms": o.Latency.Milliseconds(), "error": errText})
}

// webhookAttempts serves GET /webhooks/<id>/attempts/?limit=: the
// endpoint's newest attempts first.
func (s *Server) webhookAttempts(c *gin.Context) {
	e, ok := s.orgWebhook(c)
	if !ok {
		return
	}
	limit := 50
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxWebhookAttemptsPage {
			failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", []dataimport.FieldError{{Attr: "limit",
				Code: dataimport.CodeInvalid, Detail: fmt.Sprintf("A whole number from 1 to %d.", maxWebhookAttemptsPage)}})
			return
		}
		limit = n
	}
	log, err := s.deps.Webhooks.WebhookLog(c.Request.Context(), e.ID, limit)
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusOK, newWebhookAttempts(log))
}

// eventTypesPatch is a PATCH's event_types: nil when absent (unchanged).
func eventTypesPatch(types []string) *[]string {
	if types == nil {
		return nil
	}
	return &types
}

// newWebhookSecret draws a signing secret, or answers 500.
func newWebhookSecret(c *gin.Context) (string, bool) {
	secret, err := webhook.NewSecret()
	if err != nil {
		abortWithError(c, err)
		return "", false
	}
	return secret, true
}

// webhookURL is the address of endpoint id.
func webhookURL(id int64) string {
	return "/v1/data-import/webhooks/" + strconv.FormatInt(id, 10) + "/"
}
