// Package apiclient is the tests' small client of Sundial's REST API: it
// sends JSON with the project's API key and fails the test on transport
// errors, so that suites only state what they expect of the answers.
package apiclient

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Client talks to one gateway as one project.
type Client struct {
	// BaseURL is the gateway's root, e.g. http://127.0.0.1:8080.
	BaseURL string
	APIKey  string
	// HTTP sends the requests (a contract-checking client, say).
	HTTP *http.Client
}

// Do sends body (when not nil) as JSON and returns the answer and its body.
func (c Client) Do(t testing.TB, method, path string, body any) (*http.Response, []byte) {
	t.Helper()
	resp, raw, err := c.Send(method, path, body)
	require.NoError(t, err)
	return resp, raw
}

// Send is Do for goroutines other than the test's, which must not fail the
// test themselves: a transport error is returned.
func (c Client) Send(method, path string, body any) (*http.Response, []byte, error) {
	return c.SendHeader(method, path, body, nil)
}

// SendHeader is Send with headers of the caller's (an Idempotency-Key, say)
// added to the request.
func (c Client) SendHeader(method, path string, body any, header http.Header) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.BaseURL+path, rd)
	if err != nil {
		return nil, nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("X-API-Key", c.APIKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	return resp, raw, nil
}

// Schedule creates a hook and returns the answer's data as T.
func Schedule[T any](t testing.TB, c Client, req map[string]any) T {
	t.Helper()
	resp, raw := c.Do(t, http.MethodPost, "/v1/hooks", req)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "POST /v1/hooks: %s", raw)
	var out struct{ Data T }
	require.NoError(t, json.Unmarshal(raw, &out))
	return out.Data
}
