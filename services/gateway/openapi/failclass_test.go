package openapi_test

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/failclass"
	"github.com/sundial-run/sundial/services/gateway/openapi"
)

// The document lists the failure classes of pkg/failclass, in the enum's
// order, and the actions a failure policy may choose.
func TestTheDocumentListsTheFailureClasses(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.YAML)
	require.NoError(t, err)
	var classes []string
	for _, v := range doc.Components.Schemas["FailureClass"].Value.Enum {
		classes = append(classes, v.(string))
	}
	require.Equal(t, failclass.Words(), classes)
	require.Equal(t, []any{string(failclass.Retry), string(failclass.Fail), string(failclass.Pause)},
		doc.Components.Schemas["FailureAction"].Value.Enum)
}
