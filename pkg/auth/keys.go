// Package auth issues and checks API keys and access tokens (CONTRACT §3).
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// keyPrefixTag marks our keys so that secret scanners and humans recognise them.
const keyPrefixTag = "dik"

// GeneratedKey is a new API key: Plain is shown to the operator once and
// never stored; Prefix identifies the key for revocation; Hash is stored.
type GeneratedKey struct {
	Plain  string
	Prefix string
	Hash   []byte
}

// GenerateAPIKey returns a key of the form dik_<prefix>_<secret>.
func GenerateAPIKey() (GeneratedKey, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return GeneratedKey{}, fmt.Errorf("generate api key: %w", err)
	}
	prefix := keyPrefixTag + "_" + hex.EncodeToString(b[:4])
	plain := prefix + "_" + hex.EncodeToString(b[4:])
	return GeneratedKey{Plain: plain, Prefix: prefix, Hash: HashAPIKey(plain)}, nil
}

// HashAPIKey is the stored form of a key. Keys carry 160 random bits, so a
// fast hash is enough: there is nothing to brute-force offline.
func HashAPIKey(plain string) []byte {
	h := sha256.Sum256([]byte(strings.TrimSpace(plain)))
	return h[:]
}
