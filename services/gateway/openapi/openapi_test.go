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
	var found []string
	eachObject(t, func(path string, object map[string]any) {
		for name := range object {
			if strings.HasPrefix(name, "x-go") || strings.HasPrefix(name, "x-oapi-codegen") {
				found = append(found, path+"."+name)
			}
		}
	})
	require.Empty(t, found)
}

// An object schema without properties is free-form JSON (a hook's data);
// generators differ on what such a schema allows unless it says so, and
// some would decode it into an empty struct, dropping every member.
func TestFreeFormObjectsSayAdditionalProperties(t *testing.T) {
	t.Parallel()
	var found []string
	eachObject(t, func(path string, object map[string]any) {
		if object["type"] != "object" {
			return
		}
		for _, name := range []string{"properties", "additionalProperties", "patternProperties", "oneOf", "anyOf", "allOf", "$ref"} {
			if _, ok := object[name]; ok {
				return
			}
		}
		found = append(found, path)
	})
	require.Empty(t, found)
}

// eachObject calls f with every JSON object of the served document and its
// path.
func eachObject(t *testing.T, f func(path string, object map[string]any)) {
	t.Helper()
	raw, err := openapi.JSON(openapi.DefaultHeaderPrefix)
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(raw, &doc))
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			f(path, v)
			for name, member := range v {
				walk(path+"."+name, member)
			}
		case []any:
			for i, item := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), item)
			}
		}
	}
	walk("$", doc)
}
