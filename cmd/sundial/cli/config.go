package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	sundial "github.com/sundial-run/sundial/sdk"
)

// The environment variables that win over the config file.
const (
	envAPIKey = "SUNDIAL_API_KEY"
	envAPIURL = "SUNDIAL_API_URL"
)

// config is what `sundial login` keeps: the API's address and the key.
type config struct {
	APIURL string `json:"apiUrl"`
	APIKey string `json:"apiKey"`
}

// configPath is <user config dir>/sundial/config.json.
func (s *state) configPath() (string, error) {
	dir := s.env.ConfigDir
	if dir == "" {
		var err error
		if dir, err = os.UserConfigDir(); err != nil {
			return "", fmt.Errorf("config directory: %w", err)
		}
	}
	return filepath.Join(dir, "sundial", "config.json"), nil
}

// loadConfig reads the config file; a missing one is the zero config.
func loadConfig(path string) (config, error) {
	var c config
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("read %s: not a sundial config (%w); run `sundial login` again", path, err)
	}
	return c, nil
}

// saveConfig writes c where only the user can read it (the key is a
// credential): the directory 0700, the file 0600, replaced atomically so
// that a failed write leaves the old one.
func saveConfig(path string, c config) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// MkdirAll leaves an existing directory's mode alone.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restrict %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".config-*.json") // created 0600
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // after the rename, a no-op
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// credentials are the API's address and key: the environment's, else the
// config file's, else (the address) the SDK's default.
func (s *state) credentials() (config, error) {
	path, err := s.configPath()
	if err != nil {
		return config{}, err
	}
	c, err := loadConfig(path)
	if err != nil {
		return config{}, err
	}
	if v := s.env.Getenv(envAPIKey); v != "" {
		c.APIKey = v
	}
	if v := s.env.Getenv(envAPIURL); v != "" {
		c.APIURL = v
	}
	if c.APIURL == "" {
		c.APIURL = sundial.DefaultBaseURL
	}
	if c.APIKey == "" {
		return config{}, fmt.Errorf("no API key: run `sundial login` or set %s", envAPIKey)
	}
	return c, nil
}

// client is the SDK's client for c.
func (s *state) client(c config) *sundial.Client {
	opts := []sundial.Option{sundial.WithBaseURL(c.APIURL), sundial.WithUserAgent("sundial-cli/" + s.env.Version)}
	if s.env.HTTPClient != nil {
		opts = append(opts, sundial.WithHTTPClient(s.env.HTTPClient))
	}
	return sundial.NewClient(c.APIKey, opts...)
}

// apiClient is the client of the credentials in effect.
func (s *state) apiClient() (*sundial.Client, error) {
	c, err := s.credentials()
	if err != nil {
		return nil, err
	}
	return s.client(c), nil
}

// checkHTTPURL refuses what is not an absolute http or https URL, naming
// the flag.
func checkHTTPURL(flag, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("%s: %q is not an http or https URL (e.g. http://localhost:3000)", flag, raw)
	}
	return u, nil
}
