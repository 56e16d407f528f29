package openapi_test

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/retry"
	"github.com/sundial-run/sundial/services/gateway/openapi"
)

// The document states the retry bounds that pkg/retry enforces: a client
// reading it is refused for nothing it allows.
func TestTheDocumentStatesTheRetryBounds(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.YAML)
	require.NoError(t, err)
	for schema, b := range map[string]retry.Bounds{
		"RetryOverride":    retry.OverrideBounds,
		"RetryPolicy":      retry.ProjectBounds,
		"RetryPolicyPatch": retry.ProjectBounds,
	} {
		props := doc.Components.Schemas[schema].Value.Properties
		for member, want := range map[string][2]float64{
			"minRetries":    {float64(b.MinRetries.Min), float64(b.MinRetries.Max)},
			"delaySecs":     {float64(b.DelaySecs.Min), float64(b.DelaySecs.Max)},
			"backoffFactor": {b.BackoffFactor.Min, b.BackoffFactor.Max},
			"maxDelaySecs":  {float64(b.MaxDelaySecs.Min), float64(b.MaxDelaySecs.Max)},
		} {
			p := props[member].Value
			require.Equal(t, want, [2]float64{*p.Min, *p.Max}, "%s.%s", schema, member)
		}
		require.Equal(t, []any{retry.StrategyFixed, retry.StrategyExponential}, props["strategy"].Value.Enum, schema)
	}
	require.InDelta(t, retry.DefaultBackoffFactor, doc.Components.Schemas["RetryOverride"].Value.Properties["backoffFactor"].Value.Default, 0)
}
