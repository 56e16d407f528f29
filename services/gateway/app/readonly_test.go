package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
)

// A gateway whose connections take no writes, as on a standby that a
// failover has not promoted yet (docs/operations.md, "PostgreSQL:
// failover, backups and restore"), answers a create with 503 and
// Retry-After, never 500, and creates nothing.
func TestCreateOnAReadOnlyDatabaseIsA503(t *testing.T) {
	t.Parallel()
	b := setup(t, func(cfg *app.Config) {
		u, err := url.Parse(cfg.DatabaseURL)
		require.NoError(t, err)
		q := u.Query()
		q.Set("default_transaction_read_only", "on") // every write fails with 25006, as on a standby
		u.RawQuery = q.Encode()
		cfg.DatabaseURL = u.String()
	})

	res := b.post(`{"path":"/x","postIn":"1h","data":{}}`)

	res.requireError(t, http.StatusServiceUnavailable, "unavailable")
	require.Equal(t, "5", res.header.Get("Retry-After"))
	require.Contains(t, b.logs.String(), "SQLSTATE 25006", "the access log names the cause")
	list := b.do(http.MethodGet, "/v1/hooks?limit=1", nil)
	require.Equal(t, http.StatusOK, list.status, "reads still work: %s", list.body)
	require.JSONEq(t, `[]`, string(decodeStrict[struct {
		Data json.RawMessage `json:"data"`
		Meta json.RawMessage `json:"meta"`
	}](t, list.body).Data))
}
