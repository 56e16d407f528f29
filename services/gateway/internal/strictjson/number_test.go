package strictjson_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// TestDecodeRefusesNumbersPostgreSQLCannotStore: each literal's verdict was
// checked against PostgreSQL 15 with `SELECT '{"a": <literal>}'::jsonb`
// ("value overflows numeric format" for those refused).
func TestDecodeRefusesNumbersPostgreSQLCannotStore(t *testing.T) {
	t.Parallel()
	storable := []string{
		"0", "-0", "1", "1.5", "1e400", "1E+5", "1e131071", "-1e131071", "123e131069", "10e131070",
		"0.001e131074", "1e-16383", "1.5e-16382", "0.0e-16382", "0e200000", "0e1000000",
		"123456789012345678901234567890", "1e-0",
	}
	for _, n := range storable {
		t.Run("stores "+n, func(t *testing.T) {
			t.Parallel()
			var v fuzzTarget // data is raw JSON, as a hook's is
			require.NoError(t, strictjson.Decode([]byte(`{"data":{"n":`+n+`}}`), &v))
		})
	}
	refused := []string{
		"1e131072", "-1e131072", "123e131070", "10e131071", "0.001e131075", "1e200000",
		"1e-16384", "1.0e-16383", "1.00e-16382", "1.25e-16382", "100e-16385", "0e-20000", "0.0e-16383",
		"1e99999999999999999999", "0e1000001",
	}
	for _, n := range refused {
		t.Run("refuses "+n, func(t *testing.T) {
			t.Parallel()
			var v fuzzTarget // data is raw JSON, as a hook's is
			err := strictjson.Decode([]byte(`{"path":"/a","data":{"list":[1,`+n+`]}}`), &v)
			var de *strictjson.Error
			require.True(t, errors.As(err, &de), "got %v", err)
			require.Equal(t, "data.list[1]", de.Field)
			require.Contains(t, de.Message, "too large or too precise to store")
		})
	}
}
