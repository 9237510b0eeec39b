package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// SecretStore keeps the generated token secret so that every replica signs
// with the same one.
type SecretStore interface {
	TokenSecret(ctx context.Context, candidate string) (string, error)
}

// LoadSecret returns configured when set (TOKEN_SECRET), else the secret kept
// in the database, generating it on the very first start.
func LoadSecret(ctx context.Context, store SecretStore, configured string) (string, error) {
	if configured != "" {
		if len(configured) < 32 {
			return "", fmt.Errorf("TOKEN_SECRET must be at least 32 characters")
		}
		return configured, nil
	}
	var b [48]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate token secret: %w", err)
	}
	return store.TokenSecret(ctx, base64.RawURLEncoding.EncodeToString(b[:]))
}
