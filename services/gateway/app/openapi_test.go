package app_test

import (
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/openapi/contract"
)

func TestServesTheOpenAPIDocument(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.do(http.MethodGet, "/v1/openapi.json", nil, header("X-API-Key", ""))
	require.Equal(t, http.StatusOK, res.status, "no API key needed")

	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(res.body)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(loader.Context))
	require.Equal(t, "3.1.0", doc.OpenAPI)
	require.Equal(t, "1.0.0", doc.Info.Version)
	require.Equal(t, "Sundial API", doc.Info.Title)
	require.NotNil(t, doc.Paths.Find("/hooks/{id}"))
}

func TestTheServedDocumentNamesTheConfiguredHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *app.Config) { c.HeaderPrefix = "Acme" })
	res := b.do(http.MethodGet, "/v1/openapi.json", nil)
	require.Equal(t, http.StatusOK, res.status)
	require.Contains(t, string(res.body), `"Acme-HookQuota-Limit"`)
	require.NotContains(t, string(res.body), `"Sundial-HookQuota-Limit"`)
}

// TestNoOperationIsUnimplemented calls every operation of the document and
// fails while any answers 501: the document promises each one. It uses a
// plain client, since a 501 is not in the document either.
func TestNoOperationIsUnimplemented(t *testing.T) {
	t.Parallel()
	b := setup(t)
	spec, err := contract.Load("Sundial")
	require.NoError(t, err)
	var unimplemented []string
	for path, item := range spec.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			if b.call(method, path, op.RequestBody != nil) == http.StatusNotImplemented {
				unimplemented = append(unimplemented, method+" /v1"+path+" ("+op.OperationID+")")
			}
		}
	}
	sort.Strings(unimplemented)
	require.Empty(t, unimplemented, "operations of the document that answer 501")
}

// call sends a request to an operation with a fresh id in the path and an
// empty object as the body, and returns the status.
func (b bundle) call(method, path string, withBody bool) int {
	b.t.Helper()
	var body io.Reader
	if withBody {
		body = strings.NewReader(`{}`)
	}
	url := b.base + "/v1" + strings.ReplaceAll(path, "{id}", uuid.NewString())
	req, err := http.NewRequestWithContext(b.ctx, method, url, body)
	require.NoError(b.t, err)
	req.Header.Set("X-API-Key", b.creds.APIKey)
	if withBody {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := b.raw.Do(req)
	require.NoError(b.t, err)
	require.NoError(b.t, res.Body.Close())
	return res.StatusCode
}
