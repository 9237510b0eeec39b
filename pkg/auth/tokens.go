package auth

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// Token kinds; an access token never works as a refresh token and vice versa.
const (
	kindAccess  = "access"
	kindRefresh = "refresh"
)

var (
	// ErrTokenExpired is answered 401 token_expired.
	ErrTokenExpired = errors.New("token expired")
	// ErrTokenInvalid is answered 401 authentication_failed.
	ErrTokenInvalid = errors.New("token invalid")
)

// Claims identify the organisation and the API key a token was issued for, so
// that revoking the key ends every token issued from it.
type Claims struct {
	jwt.RegisteredClaims
	Kind  string `json:"kind"`
	OrgID int64  `json:"org"`
	KeyID int64  `json:"key"`
}

// ClockSkew is how far apart the clocks of the replicas that mint and check a
// token may be: a token minted on a replica whose clock runs a few seconds
// ahead is not "issued in the future" elsewhere, and a token expired by less
// than this still passes. It is applied to every time claim (iat, nbf, exp)
// in one place, the parser built by newParser.
const ClockSkew = 5 * time.Second

// Issuer signs and verifies tokens with an HMAC secret.
type Issuer struct {
	secret     []byte
	accessTTL  time.Duration
	refreshTTL time.Duration
	now        func() time.Time
}

// NewIssuer builds an Issuer; now may be nil (time.Now).
func NewIssuer(secret string, accessTTL, refreshTTL time.Duration, now func() time.Time) *Issuer {
	if now == nil {
		now = time.Now
	}
	return &Issuer{secret: []byte(secret), accessTTL: accessTTL, refreshTTL: refreshTTL, now: now}
}

// TokenPair is the obtainToken answer.
type TokenPair struct {
	Token            string
	RefreshToken     string
	RefreshExpiresAt time.Time
}

// Issue creates an access and a refresh token for a key.
func (i *Issuer) Issue(orgID, keyID int64) (TokenPair, error) {
	now := i.now()
	access, err := i.sign(kindAccess, orgID, keyID, now, now.Add(i.accessTTL))
	if err != nil {
		return TokenPair{}, err
	}
	refreshExp := now.Add(i.refreshTTL)
	refresh, err := i.sign(kindRefresh, orgID, keyID, now, refreshExp)
	if err != nil {
		return TokenPair{}, err
	}
	return TokenPair{Token: access, RefreshToken: refresh, RefreshExpiresAt: refreshExp}, nil
}

func (i *Issuer) sign(kind string, orgID, keyID int64, now, exp time.Time) (string, error) {
	c := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   strconv.FormatInt(orgID, 10),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp),
			ID:        uuid.NewString(),
		},
		Kind: kind, OrgID: orgID, KeyID: keyID,
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(i.secret)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
}

// ParseAccess verifies an access token.
func (i *Issuer) ParseAccess(token string) (Claims, error) { return i.parse(token, kindAccess) }

// ParseRefresh verifies a refresh token.
func (i *Issuer) ParseRefresh(token string) (Claims, error) { return i.parse(token, kindRefresh) }

// newParser is the one token parser: every time claim is checked against
// i.now with ClockSkew of leeway, and only HS256 is accepted ("alg: none" and
// algorithm-confusion tokens fail here).
func (i *Issuer) newParser() *jwt.Parser {
	return jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithTimeFunc(i.now), jwt.WithLeeway(ClockSkew),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
}

func (i *Issuer) parse(token, kind string) (Claims, error) {
	var c Claims
	_, err := i.newParser().ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return i.secret, nil })
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, ErrTokenExpired
	case err != nil:
		return Claims{}, fmt.Errorf("%w: %w", ErrTokenInvalid, err)
	case c.Kind != kind || c.OrgID <= 0 || c.KeyID <= 0:
		return Claims{}, ErrTokenInvalid
	}
	return c, nil
}
