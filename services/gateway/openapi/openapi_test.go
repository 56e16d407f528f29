package openapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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

// The document is served to anyone's generator: Go bindings of the
// gateway's own (go-bindings.overlay.yaml) belong to its generator's
// configuration, never to the document, where they would name packages a
// client cannot import.
func TestJSONHasNoGeneratorBindings(t *testing.T) {
	t.Parallel()
	raw, err := openapi.JSON(openapi.DefaultHeaderPrefix)
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Empty(t, bindings(doc, "$"))
}

// bindings returns the paths of the members of v named like oapi-codegen's
// extensions (x-go-type, x-go-type-import, x-oapi-codegen-extra-tags...).
func bindings(v any, path string) []string {
	var found []string
	switch v := v.(type) {
	case map[string]any:
		for name, member := range v {
			if strings.HasPrefix(name, "x-go") || strings.HasPrefix(name, "x-oapi-codegen") {
				found = append(found, path+"."+name)
			}
			found = append(found, bindings(member, path+"."+name)...)
		}
	case []any:
		for i, item := range v {
			found = append(found, bindings(item, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return found
}
