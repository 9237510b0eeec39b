package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// KeyStore is what authentication needs from the database.
type KeyStore interface {
	APIKeyByHash(ctx context.Context, hash []byte) (dataimport.APIKey, error)
	ActiveAPIKey(ctx context.Context, keyID int64) (dataimport.APIKey, error)
}

// Principal is the authenticated caller of a data-import request.
type Principal struct {
	OrganisationID int64
	KeyID          int64
	KeyPrefix      string
	Scopes         []string // the key's scopes (dataimport.Scopes)
}

// HasScope reports whether the caller's key carries scope.
func (p Principal) HasScope(scope string) bool {
	for _, s := range p.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// Service ties keys and tokens together.
type Service struct {
	keys   KeyStore
	issuer *Issuer
}

// NewService builds the auth service.
func NewService(keys KeyStore, issuer *Issuer) *Service {
	return &Service{keys: keys, issuer: issuer}
}

// ErrInvalidAPIKey is answered with GraphQL errorCode invalid_api_key.
var ErrInvalidAPIKey = errors.New("invalid api key")

// ErrInvalidRefreshToken is answered with GraphQL errorCode invalid_refresh_token.
var ErrInvalidRefreshToken = errors.New("invalid refresh token")

// ErrKeyRevoked means a well-formed token belongs to a revoked key.
var ErrKeyRevoked = errors.New("api key revoked")

// ObtainWithAPIKey exchanges an API key for a token pair.
func (s *Service) ObtainWithAPIKey(ctx context.Context, apiKey string) (TokenPair, error) {
	if strings.TrimSpace(apiKey) == "" {
		return TokenPair{}, ErrInvalidAPIKey
	}
	k, err := s.keys.APIKeyByHash(ctx, HashAPIKey(apiKey))
	if errors.Is(err, dataimport.ErrAPIKeyNotFound) {
		return TokenPair{}, ErrInvalidAPIKey
	}
	if err != nil {
		return TokenPair{}, fmt.Errorf("obtain token: %w", err)
	}
	return s.issuer.Issue(k.OrganisationID, k.ID)
}

// Refresh exchanges a refresh token for a new pair, provided its key is still active.
func (s *Service) Refresh(ctx context.Context, refreshToken string) (TokenPair, error) {
	c, err := s.issuer.ParseRefresh(strings.TrimSpace(refreshToken))
	if err != nil {
		return TokenPair{}, ErrInvalidRefreshToken
	}
	k, err := s.keys.ActiveAPIKey(ctx, c.KeyID)
	if errors.Is(err, dataimport.ErrAPIKeyNotFound) || (err == nil && k.OrganisationID != c.OrgID) {
		return TokenPair{}, ErrInvalidRefreshToken
	}
	if err != nil {
		return TokenPair{}, fmt.Errorf("refresh token: %w", err)
	}
	return s.issuer.Issue(k.OrganisationID, k.ID)
}

// ErrNoCredentials means the Authorization header is absent or empty.
var ErrNoCredentials = errors.New("no credentials")

// Authenticate checks an Authorization header value: "Token <t>" or a bare "<t>".
func (s *Service) Authenticate(ctx context.Context, header string) (Principal, error) {
	token := strings.TrimSpace(header)
	if scheme, rest, _ := strings.Cut(token, " "); isScheme(scheme) {
		token = strings.TrimSpace(rest)
	}
	if token == "" {
		return Principal{}, ErrNoCredentials
	}
	c, err := s.issuer.ParseAccess(token)
	if err != nil {
		return Principal{}, err
	}
	k, err := s.keys.ActiveAPIKey(ctx, c.KeyID)
	if errors.Is(err, dataimport.ErrAPIKeyNotFound) || (err == nil && k.OrganisationID != c.OrgID) {
		return Principal{}, ErrKeyRevoked
	}
	if err != nil {
		return Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	return Principal{OrganisationID: k.OrganisationID, KeyID: k.ID, KeyPrefix: k.Prefix, Scopes: k.Scopes}, nil
}

type principalKey struct{}

// WithPrincipal stores the caller in ctx.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the caller stored by the auth middleware.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// isScheme recognises the prefix words partners put before the token.
func isScheme(s string) bool {
	return strings.EqualFold(s, "Token") || strings.EqualFold(s, "Bearer") || strings.EqualFold(s, "JWT")
}
