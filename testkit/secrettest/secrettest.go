// Package secrettest gives tests the SUNDIAL_SECRET_KEYS keyring that the
// services seal secrets in PostgreSQL with (package secretbox). The key is
// fixed and public: it exists for tests only.
package secrettest

import "github.com/sundial-run/sundial/pkg/secretbox"

// Keys is a SUNDIAL_SECRET_KEYS value: one key, "test".
const Keys = "test:c3VuZGlhbCB0ZXN0IGtleTogbm90IGZvciBwcm9kISE="

// Keyring is Keys parsed.
func Keyring() *secretbox.Keyring {
	k, err := secretbox.Parse(Keys)
	if err != nil {
		panic(err) // Keys is a constant: a failure is a bug of this package
	}
	return k
}
