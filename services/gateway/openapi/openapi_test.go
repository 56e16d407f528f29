package openapi_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/openapi"
)

func TestJSONIsTheDocument(t *testing.T) {
	t.Parallel()
	raw, err := openapi.JSON(openapi.DefaultHeaderPrefix)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(raw, []byte(`{"openapi":"3.1.0","info":{"title":"Sundial API","version":"1.0.0"`)),
		"members keep the document's order")

	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Equal(t, "1.0.0", doc.Info.Version)

	fromYAML, err := loader.LoadFromData(openapi.YAML)
	require.NoError(t, err)
	a, err := json.Marshal(doc)
	require.NoError(t, err)
	b, err := json.Marshal(fromYAML)
	require.NoError(t, err)
	require.JSONEq(t, string(b), string(a), "the JSON says what the YAML says")
}

func TestJSONNamesHeadersWithThePrefix(t *testing.T) {
	t.Parallel()
	raw, err := openapi.JSON("Acme")
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Responses map[string]struct {
				Headers map[string]json.RawMessage `json:"headers"`
			} `json:"responses"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	headers := doc.Components.Responses["TooManyRequests"].Headers
	require.Contains(t, headers, "Acme-HookQuota-Limit")
	require.Contains(t, headers, "Retry-After")
	require.NotContains(t, headers, "Sundial-HookQuota-Limit")
}
