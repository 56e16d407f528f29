package suite

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// DemoFile is where the demo project's id and keys are kept between runs,
// in the data folder. The database keeps only a hash of an API key, so the
// key a person pastes exists nowhere else: the file is the person's alone
// (mode 0600), like the database it goes with.
const DemoFile = "demo-project.json"

// ReceiverAddrFile holds, in the data folder, the demo receiver's address,
// which the next run listens on again when it is free: the demo project's
// domain then stays the same from run to run, and so does a sundial.toml
// that `sundial config init` or `pull` wrote from it.
const ReceiverAddrFile = "demo-receiver-addr"

// errUnknownKey is the gateway refusing the kept API key: the project is
// not in this database (another SUNDIAL_DATABASE_URL, a database dropped).
var errUnknownKey = errors.New("the gateway does not know the kept API key")

// demoProject returns the demo project: the one kept from an earlier run
// when this database still has it (pointed at this run's receiver, whose
// port changes from run to run, with its current signing key, which a
// rotation may have changed), else a new one, kept for the next run.
func demoProject(ctx context.Context, opts Options, dataDir, dbURL, secretKeys, apiBase, domain string, log *slog.Logger) (creds Credentials, reused bool, err error) {
	path := filepath.Join(dataDir, DemoFile)
	kept, err := loadDemo(path)
	switch {
	case err != nil:
		return creds, false, err
	case kept != nil && apiBase != "":
		err := pointAt(ctx, apiBase, kept.APIKey, domain)
		if err == nil {
			return refreshed(ctx, path, apiBase, *kept)
		}
		if !errors.Is(err, errUnknownKey) {
			return creds, false, fmt.Errorf("reuse the demo project kept in %s: %w", path, err)
		}
		log.Info("the kept demo project is not in this database: creating another", "file", path, "project_id", kept.ProjectID)
	}
	creds, err = opts.CreateProject(ctx, dbURL, secretKeys, "demo", domain)
	if err != nil {
		return creds, false, fmt.Errorf("create the demo project: %w", err)
	}
	return creds, false, saveDemo(path, creds)
}

// DemoEmail is the dashboard's demo user, an owner of the demo project.
const DemoEmail = "demo@sundial.local"

// Login is the dashboard's demo sign-in, shown in the banner.
type Login struct {
	Email, Password string
}

// demoUser makes DemoEmail an owner of the project with a new random
// password (the last run's is forgotten: it was only ever printed).
func demoUser(ctx context.Context, create CreateUser, dbURL, projectID string) (Login, error) {
	b := make([]byte, 15)
	if _, err := rand.Read(b); err != nil {
		return Login{}, fmt.Errorf("demo password: %w", err)
	}
	login := Login{Email: DemoEmail, Password: base64.RawURLEncoding.EncodeToString(b)}
	if err := create(ctx, dbURL, projectID, login.Email, login.Password); err != nil {
		return Login{}, fmt.Errorf("create the demo user: %w", err)
	}
	return login, nil
}

// loadDemo reads the kept credentials; nil when there are none.
func loadDemo(path string) (*Credentials, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("demo project file: %w", err)
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil || c.ProjectID == "" || c.APIKey == "" || c.SigningKey == "" {
		return nil, fmt.Errorf("demo project file %s is damaged (delete it to create another project): %v", path, err)
	}
	return &c, nil
}

// saveDemo keeps creds for the next run, readable by this user only.
func saveDemo(path string, creds Credentials) error {
	b, err := json.MarshalIndent(creds, "", "  ")
	if err != nil {
		return fmt.Errorf("demo project file: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("demo project file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("demo project file: %w", err)
	}
	return nil
}

// refreshed is kept with the project's active signing key, kept again
// when a rotation changed it.
func refreshed(ctx context.Context, path, apiBase string, kept Credentials) (Credentials, bool, error) {
	key, err := activeSigningKey(ctx, apiBase, kept.APIKey)
	if err != nil {
		return kept, false, fmt.Errorf("reuse the demo project kept in %s: %w", path, err)
	}
	if key == kept.SigningKey {
		return kept, true, nil
	}
	kept.SigningKey = key
	return kept, true, saveDemo(path, kept)
}

// pointAt sets the project's domain through the API (PATCH /v1/project),
// which also proves that this database knows the key.
func pointAt(ctx context.Context, apiBase, apiKey, domain string) error {
	body, err := json.Marshal(map[string]string{"domain": domain})
	if err != nil {
		return err
	}
	_, err = call(ctx, http.MethodPatch, apiBase+"/project", apiKey, body)
	return err
}

// activeSigningKey is the project's active signing key (GET /v1/signing-keys).
func activeSigningKey(ctx context.Context, apiBase, apiKey string) (string, error) {
	answer, err := call(ctx, http.MethodGet, apiBase+"/signing-keys", apiKey, nil)
	if err != nil {
		return "", err
	}
	var keys struct {
		Data []struct{ State, Key string } `json:"data"`
	}
	if err := json.Unmarshal(answer, &keys); err != nil {
		return "", fmt.Errorf("GET /v1/signing-keys: %w", err)
	}
	for _, k := range keys.Data {
		if k.State == "active" {
			return k.Key, nil
		}
	}
	return "", errors.New("GET /v1/signing-keys: the project has no active signing key")
}

// call makes one API request with the project's key and returns the body of
// a 200 answer; a 401 is errUnknownKey.
func call(ctx context.Context, method, url, apiKey string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-API-Key", apiKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	case resp.StatusCode == http.StatusUnauthorized:
		return nil, errUnknownKey
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(answer))
	}
	return answer, nil
}
