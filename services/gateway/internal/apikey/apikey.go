// Package apikey makes, checks and manages project API keys: creating,
// listing (prefixes only) and revoking them, and resolving a key to its
// project on every request (Verifier).
//
// A key reads sdk_<8 base32 chars>_<43 base64url chars>: the first part is a
// visible prefix that people can tell keys apart by and the database finds
// the key's row by; the second is 32 random bytes. Only the prefix and the
// SHA-256 of the whole key are stored. The key carries 256 bits of
// randomness, so a slow password hash would add nothing but latency.
package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

const (
	scheme       = "sdk_"
	idChars      = 8  // base32 characters of the visible prefix (5 random bytes)
	secretBytes  = 32 // random bytes of the secret part
	secretChars  = 43 // their unpadded base64url length
	prefixLength = len(scheme) + idChars
	keyLength    = prefixLength + 1 + secretChars
)

// lowerBase32 keeps prefixes readable and unambiguous in lower case.
var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

var (
	// ErrInvalid is any key that is malformed, unknown or does not match.
	ErrInvalid = errors.New("invalid API key")
	// ErrRevoked is a key that matched but has been revoked.
	ErrRevoked = errors.New("API key has been revoked")
)

// Key is a newly made key. Plain is shown to its owner once and never stored.
type Key struct {
	Plain  string
	Prefix string
	Hash   []byte
}

// New makes a key from crypto/rand.
func New() (Key, error) {
	id := make([]byte, 5)
	secret := make([]byte, secretBytes)
	if _, err := rand.Read(id); err != nil {
		return Key{}, fmt.Errorf("api key: %w", err)
	}
	if _, err := rand.Read(secret); err != nil {
		return Key{}, fmt.Errorf("api key: %w", err)
	}
	prefix := scheme + lowerBase32.EncodeToString(id)
	plain := prefix + "_" + base64.RawURLEncoding.EncodeToString(secret)
	return Key{Plain: plain, Prefix: prefix, Hash: Hash(plain)}, nil
}

// Hash is the SHA-256 of the whole key, as stored.
func Hash(plain string) []byte {
	sum := sha256.Sum256([]byte(plain))
	return sum[:]
}

// Prefix returns the visible prefix of a well-formed key, or ErrInvalid.
func Prefix(plain string) (string, error) {
	if len(plain) != keyLength || !strings.HasPrefix(plain, scheme) || plain[prefixLength] != '_' {
		return "", ErrInvalid
	}
	if _, err := lowerBase32.DecodeString(plain[len(scheme):prefixLength]); err != nil {
		return "", ErrInvalid
	}
	if _, err := base64.RawURLEncoding.Strict().DecodeString(plain[prefixLength+1:]); err != nil {
		return "", ErrInvalid
	}
	return plain[:prefixLength], nil
}

// Matches compares a key with a stored hash in constant time, so the time
// taken tells an attacker nothing about how much of a guess was right.
func Matches(plain string, storedHash []byte) bool {
	return subtle.ConstantTimeCompare(Hash(plain), storedHash) == 1
}

// Store inserts a key for a project under name (checked by the caller,
// see ValidateName). A prefix collision (40 random bits, so rare) comes
// back as postgres.ErrConflict for the caller to retry.
func Store(ctx context.Context, q *store.Queries, projectID uuid.UUID, name string, k Key) (Info, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Info{}, fmt.Errorf("api key id: %w", err)
	}
	row, err := q.InsertAPIKey(ctx, store.InsertAPIKeyParams{ID: id, ProjectID: projectID, Name: name, Prefix: k.Prefix, KeyHash: k.Hash})
	if err != nil {
		return Info{}, fmt.Errorf("insert api key: %w", postgres.Translate(err))
	}
	return Info(row), nil
}

// Revoke refuses the key with this prefix from now on. It reports whether
// a key that was still valid was revoked.
func Revoke(ctx context.Context, q *store.Queries, prefix string) (bool, error) {
	n, err := q.RevokeAPIKey(ctx, prefix)
	if err != nil {
		return false, fmt.Errorf("revoke api key: %w", err)
	}
	return n == 1, nil
}
