package signing

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type vector struct {
	Name      string   `json:"name"`
	Keys      []string `json:"keys"`
	Timestamp int64    `json:"timestamp"`
	Body      string   `json:"body"`
	Signature string   `json:"signature"`
	Legacy    string   `json:"legacy"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	raw, err := os.ReadFile("testdata/vectors.json")
	require.NoError(t, err)
	var file struct {
		Vectors []vector `json:"vectors"`
	}
	require.NoError(t, json.Unmarshal(raw, &file))
	require.NotEmpty(t, file.Vectors)
	return file.Vectors
}

func TestHeaderMatchesVectors(t *testing.T) {
	t.Parallel()
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, v.Signature, Header(v.Keys, v.Timestamp, []byte(v.Body)))
			require.Equal(t, v.Legacy, Legacy(v.Keys[0], []byte(v.Body)))
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			at := time.Unix(v.Timestamp, 0)
			ts := strconv.FormatInt(v.Timestamp, 10)
			for _, k := range v.Keys {
				require.True(t, Verify(k, v.Signature, ts, []byte(v.Body), at, 5*time.Minute), "key %q", k)
			}
			require.False(t, Verify("wrong-key", v.Signature, ts, []byte(v.Body), at, 5*time.Minute))
			require.False(t, Verify(v.Keys[0], v.Signature, ts, []byte(v.Body+" "), at, 5*time.Minute), "altered body")
			require.False(t, Verify(v.Keys[0], v.Signature, ts, []byte(v.Body), at.Add(6*time.Minute), 5*time.Minute), "too old")
			require.False(t, Verify(v.Keys[0], v.Signature, "not-a-number", []byte(v.Body), at, 5*time.Minute))
		})
	}
}

// BenchmarkHeader signs a 1 KiB body with two keys, as during a rotation.
func BenchmarkHeader(b *testing.B) {
	body := []byte(`{"data":"` + strings.Repeat("x", 1024) + `"}`)
	keys := []string{"sdsig_active_key_for_the_benchmark", "sdsig_retiring_key_for_the_benchmark"}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Header(keys, 1795255205, body)
	}
}
