package suite

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sundial-run/sundial/pkg/secretbox"
)

// SecretKeysFile holds, in the data folder, the SUNDIAL_SECRET_KEYS the
// runner made for the services when the person set none: kept between runs,
// since the secrets in the kept database are sealed with it.
const SecretKeysFile = "secret-keys"

// localSecretKeys returns the kept keyring, making one on the first run.
func localSecretKeys(dataDir string) (string, error) {
	path := filepath.Join(dataDir, SecretKeysFile)
	b, err := os.ReadFile(path)
	if err == nil {
		keys := strings.TrimSpace(string(b))
		if err := secretbox.CheckEnv(keys); err != nil {
			return "", fmt.Errorf("%s is damaged (a database sealed with it needs it back): %w", path, err)
		}
		return keys, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("secret keys file: %w", err)
	}
	raw := make([]byte, secretbox.KeyBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("secret keys: %w", err)
	}
	keys := "local:" + base64.StdEncoding.EncodeToString(raw)
	// Readable by this user only, written whole or not at all.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(keys+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("secret keys file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("secret keys file: %w", err)
	}
	return keys, nil
}
