package account

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"
)

// argon2id parameters (docs/dashboard.md): 64 MiB, one pass, two lanes.
const (
	argonMemoryKiB = 64 * 1024
	argonTime      = 1
	argonThreads   = 2
	argonKeyLen    = 32
	argonSaltLen   = 16
)

// Password bounds. The upper bound caps the work one sign-in can ask of
// argon2 through a huge input.
const (
	MinPasswordLen = 10
	MaxPasswordLen = 256
)

// ErrWeakPassword is a password outside [MinPasswordLen, MaxPasswordLen].
var ErrWeakPassword = fmt.Errorf("password: want %d to %d characters", MinPasswordLen, MaxPasswordLen)

var b64 = base64.RawStdEncoding

// HashPassword hashes password with argon2id and returns the PHC string
// ($argon2id$v=19$m=65536,t=1,p=2$salt$hash).
func HashPassword(password string) (string, error) {
	if n := len([]rune(password)); n < MinPasswordLen || len(password) > MaxPasswordLen {
		return "", ErrWeakPassword
	}
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemoryKiB, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// checkPassword reports whether password matches the PHC string, with the
// parameters the string names (so that hashes made with older parameters
// still verify).
func checkPassword(password, phc string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errors.New("password hash: not an argon2id PHC string")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errors.New("password hash: unsupported argon2 version")
	}
	var memory, passes uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &memory, &passes, &threads); err != nil {
		return false, fmt.Errorf("password hash parameters: %w", err)
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, fmt.Errorf("password hash salt: %w", err)
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil {
		return false, fmt.Errorf("password hash key: %w", err)
	}
	if len(password) > MaxPasswordLen {
		return false, nil
	}
	got := argon2.IDKey([]byte(password), salt, passes, memory, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// dummyHash is checked against when the e-mail is unknown, so that a wrong
// e-mail costs the same time as a wrong password. It is made on the first
// such sign-in, not at start: a hash takes argonMemoryKiB (64 MiB), which
// stayed resident in every gateway process, dashboard or not, several
// times what a gateway at rest needs otherwise.
var dummyHash = sync.OnceValue(func() string {
	h, err := HashPassword("not-a-password-of-anyone")
	if err != nil {
		panic(err)
	}
	return h
})
