// Package secretbox seals the secrets Sundial must be able to read back
// (signing keys, custom Authorization values, channel settings, async URL
// secrets) before they are written to PostgreSQL, so that a copy of the
// database or of a backup does not hand them out.
//
// A sealed value is text: "v1:<key id>:<base64 of nonce || ciphertext>",
// AES-256-GCM with a random 96-bit nonce per value. The key id says which
// key of the keyring opens it, so keys can be rotated: the first key of the
// keyring seals, every key opens. Each value is sealed with a label as
// associated data, the column and the row it belongs to (Label), so that a
// sealed value copied to another row or column does not open there.
//
// The keyring comes from SUNDIAL_SECRET_KEYS: "id:base64key[,id:base64key...]",
// each key 32 random bytes in standard base64 (openssl rand -base64 32).
// No error and no String of this package includes key material or a
// plaintext; they name key ids and labels only.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// EnvVar is the environment variable the keyring is read from.
const EnvVar = "SUNDIAL_SECRET_KEYS"

// KeyBytes is the size of a key: AES-256.
const KeyBytes = 32

// version prefixes every sealed value, so that a later format can be told apart.
const version = "v1"

// maxKeys bounds the keyring: rotation needs two keys at a time, a few more
// cover an operator who rotates again before re-sealing.
const maxKeys = 8

// keyID is what a key id may be made of: it is stored in every sealed
// value and printed in errors, so it is short and plain.
var keyID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// HowToMake tells an operator how to make a keyring entry.
const HowToMake = `make a key with: echo "k1:$(openssl rand -base64 32)"`

var (
	// ErrUnknownKey is a sealed value whose key id is not in the keyring:
	// the key was removed before every value sealed with it was re-sealed.
	ErrUnknownKey = errors.New("sealed with a key that is not in " + EnvVar)
	// ErrNotOpened is a sealed value that does not open under its key: it
	// was altered, copied from another row or column, or the key with its
	// id is not the key it was sealed with.
	ErrNotOpened = errors.New("sealed value does not open")
	// ErrMalformed is a stored value that is not a sealed value.
	ErrMalformed = errors.New("not a sealed value")
)

// Keyring holds the keys that seal and open values. Its zero value holds
// none and opens nothing; use Parse.
type Keyring struct {
	ids   []string // ids[0] seals
	aeads map[string]cipher.AEAD
}

// Parse reads a keyring in the SUNDIAL_SECRET_KEYS form. Its errors name
// the entry (by position and id), never its key.
func Parse(s string) (*Keyring, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("no key: want id:base64key[,id:base64key...], the first sealing; %s", HowToMake)
	}
	entries := strings.Split(s, ",")
	if len(entries) > maxKeys {
		return nil, fmt.Errorf("%d keys: want at most %d", len(entries), maxKeys)
	}
	k := &Keyring{aeads: make(map[string]cipher.AEAD, len(entries))}
	for i, e := range entries {
		id, b64, ok := strings.Cut(strings.TrimSpace(e), ":")
		if !ok || !keyID.MatchString(id) {
			return nil, fmt.Errorf("key %d: want id:base64key with an id of 1 to 32 letters, digits, _ or -; %s", i+1, HowToMake)
		}
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("key %d: id %q given twice", i+1, id)
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(raw) != KeyBytes {
			return nil, fmt.Errorf("key %d (%s): want %d random bytes in standard base64; %s", i+1, id, KeyBytes, HowToMake)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("key %d (%s): %w", i+1, id, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %d (%s): %w", i+1, id, err)
		}
		k.ids = append(k.ids, id)
		k.aeads[id] = aead
	}
	return k, nil
}

// The sealed columns, the first part of their values' labels: the one
// place the gateway (which seals) and the dispatcher and notifier (which
// open) agree on them.
const (
	SigningKeySecret     = "signing_keys.secret"
	ProjectAuthorization = "projects.authorization_header"
	ProjectAsyncSecret   = "projects.async_secret"
	ChannelConfig        = "notification_channels.config"
)

// Label is the associated data of the secret in column (e.g.
// "signing_keys.secret") of the row whose id is rowID.
func Label(column string, rowID fmt.Stringer) string {
	return column + ":" + rowID.String()
}

// Primary is the id of the key that seals.
func (k *Keyring) Primary() string {
	if k == nil || len(k.ids) == 0 {
		return ""
	}
	return k.ids[0]
}

// String lists the key ids, never the keys.
func (k *Keyring) String() string {
	if k == nil || len(k.ids) == 0 {
		return "secretbox.Keyring(empty)"
	}
	return "secretbox.Keyring(" + strings.Join(k.ids, ",") + ")"
}

// Seal seals plaintext under the primary key, bound to label.
func (k *Keyring) Seal(label string, plaintext []byte) (string, error) {
	id := k.Primary()
	if id == "" {
		return "", errors.New("seal: the keyring is empty")
	}
	aead := k.aeads[id]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	box := aead.Seal(nonce, nonce, plaintext, []byte(label))
	return version + ":" + id + ":" + base64.StdEncoding.EncodeToString(box), nil
}

// SealString is Seal of a string.
func (k *Keyring) SealString(label, plaintext string) (string, error) {
	return k.Seal(label, []byte(plaintext))
}

// Open returns the plaintext of sealed, which must have been sealed with
// label. Its errors wrap ErrUnknownKey, ErrNotOpened or ErrMalformed and
// name the key id and the label.
func (k *Keyring) Open(label, sealed string) ([]byte, error) {
	id, box, err := split(sealed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	var aead cipher.AEAD
	if k != nil {
		aead = k.aeads[id]
	}
	if aead == nil {
		return nil, fmt.Errorf("%s: key %q: %w (keys present: %s)", label, id, ErrUnknownKey, strings.Join(k.idsOrNone(), ","))
	}
	if len(box) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("%s: key %q: %w", label, id, ErrMalformed)
	}
	plain, err := aead.Open(nil, box[:aead.NonceSize()], box[aead.NonceSize():], []byte(label))
	if err != nil {
		return nil, fmt.Errorf("%s: key %q: %w", label, id, ErrNotOpened)
	}
	return plain, nil
}

// ErrWrongKeys says that the keyring does not open what the database
// holds: the services were started with other keys than those that
// sealed it.
var ErrWrongKeys = errors.New(EnvVar + " does not open the secrets stored in the database")

// CheckStored opens sealed, a value the database holds under label, and
// says what is wrong when it does not open: ErrWrongKeys, naming the key
// id it was sealed with and the ids the keyring has. A service started
// with keys that open none of the stored secrets would fail every
// delivery that needs one, or seal new values no other service opens, so
// it refuses to start on this error instead.
func (k *Keyring) CheckStored(label, sealed string) error {
	_, err := k.Open(label, sealed)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnknownKey):
		id, _ := KeyID(sealed)
		return fmt.Errorf("%w: they are sealed with key %q, which %s lacks (it has %s); start with the keys the database was sealed with",
			ErrWrongKeys, id, EnvVar, strings.Join(k.idsOrNone(), ","))
	case errors.Is(err, ErrNotOpened):
		id, _ := KeyID(sealed)
		return fmt.Errorf("%w: key %q of %s is not the key %q that sealed them (the keys were made again); start with the keys the database was sealed with",
			ErrWrongKeys, id, EnvVar, id)
	default:
		return fmt.Errorf("%w: %w", ErrWrongKeys, err)
	}
}

// OpenString is Open to a string.
func (k *Keyring) OpenString(label, sealed string) (string, error) {
	b, err := k.Open(label, sealed)
	return string(b), err
}

// Current reports whether sealed was sealed with the primary key, so that
// re-sealing it would change nothing but its nonce.
func (k *Keyring) Current(sealed string) bool {
	id, _, err := split(sealed)
	return err == nil && id == k.Primary()
}

// KeyID is the id of the key sealed was sealed with.
func KeyID(sealed string) (string, error) {
	id, _, err := split(sealed)
	return id, err
}

func (k *Keyring) idsOrNone() []string {
	if k == nil || len(k.ids) == 0 {
		return []string{"none"}
	}
	return k.ids
}

func split(sealed string) (id string, box []byte, err error) {
	v, rest, ok := strings.Cut(sealed, ":")
	if !ok || v != version {
		return "", nil, ErrMalformed
	}
	id, b64, ok := strings.Cut(rest, ":")
	if !ok || !keyID.MatchString(id) {
		return "", nil, ErrMalformed
	}
	box, err = base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", nil, fmt.Errorf("key %q: %w", id, ErrMalformed)
	}
	return id, box, nil
}

// CurrentPrefix is how every value sealed with the primary key begins, so
// that SQL can find the values to re-seal after a rotation.
func (k *Keyring) CurrentPrefix() string {
	return version + ":" + k.Primary() + ":"
}

// CheckEnv is the configuration check of a SUNDIAL_SECRET_KEYS value, for
// the services' Config.Validate: nil, or what is wrong and how to fix it.
func CheckEnv(value string) error {
	if _, err := Parse(value); err != nil {
		return fmt.Errorf("%s: %w", EnvVar, err)
	}
	return nil
}
