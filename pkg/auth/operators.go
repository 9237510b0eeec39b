package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"

	"golang.org/x/crypto/bcrypt"
)

// Operator passwords (the console's login) are chosen by people, so they are
// stored with bcrypt, a slow salted hash, unlike API keys and session tokens,
// which carry enough random bits for SHA-256.

// MinOperatorPassword is the shortest password an operator may choose.
const MinOperatorPassword = 12

// GenerateOperatorPassword returns a one-time password for `importctl
// operator create`: 20 characters of a 56-letter alphabet (about 116 bits)
// without look-alikes, so it can be read off a terminal and typed.
func GenerateOperatorPassword() (string, error) {
	const alphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	return randomFrom(alphabet, 20)
}

func randomFrom(alphabet string, n int) (string, error) {
	out := make([]byte, n)
	buf := make([]byte, 1)
	for i := 0; i < n; {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("generate password: %w", err)
		}
		// Rejection sampling keeps every letter equally likely.
		if int(buf[0]) >= 256-256%len(alphabet) {
			continue
		}
		out[i] = alphabet[int(buf[0])%len(alphabet)]
		i++
	}
	return string(out), nil
}

// HashOperatorPassword returns the bcrypt hash to store.
func HashOperatorPassword(plain string) (string, error) {
	if len(plain) < MinOperatorPassword {
		return "", fmt.Errorf("a password needs at least %d characters", MinOperatorPassword)
	}
	if len(plain) > 72 {
		return "", errors.New("a password may have at most 72 bytes (bcrypt's limit)")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(plain), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// CheckOperatorPassword reports whether plain matches the stored hash.
func CheckOperatorPassword(hash, plain string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(plain)) == nil
}

// NewSessionToken returns a console session token (260 random bits) and the
// SHA-256 that is stored.
func NewSessionToken() (plain string, hash []byte) {
	plain = rand.Text() + rand.Text() // 2 × 130 bits, base32
	return plain, HashSessionToken(plain)
}

// HashSessionToken is the stored form of a session token.
func HashSessionToken(plain string) []byte {
	h := sha256.Sum256([]byte(plain))
	return h[:]
}
