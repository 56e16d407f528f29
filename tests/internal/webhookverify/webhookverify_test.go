package webhookverify

import (
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// vectors is the specification libraries' published vector, kept with
// Sundial's signing code (its source is in the file).
type vectors struct {
	Secret    string `json:"secret"`
	ID        string `json:"id"`
	Timestamp int64  `json:"timestamp"`
	Body      string `json:"body"`
	Headers   []struct {
		Name      string `json:"name"`
		Signature string `json:"signature"`
		Valid     bool   `json:"valid"`
	} `json:"headers"`
}

func load(t *testing.T) vectors {
	t.Helper()
	raw, err := os.ReadFile("../../../pkg/signing/testdata/standard_webhooks.json")
	require.NoError(t, err)
	var v vectors
	require.NoError(t, json.Unmarshal(raw, &v))
	require.NotEmpty(t, v.Headers)
	return v
}

func header(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	if sig != "" {
		h.Set("webhook-signature", sig)
	}
	return h
}

func TestVerifyAgreesWithThePublishedVectors(t *testing.T) {
	t.Parallel()
	v := load(t)
	at := time.Unix(v.Timestamp, 0)
	for _, c := range v.Headers {
		err := Verify(v.Secret, header(v.ID, v.Timestamp, c.Signature), []byte(v.Body), at, Tolerance)
		if c.Valid {
			require.NoError(t, err, c.Name)
		} else {
			require.Error(t, err, c.Name)
		}
	}
}

func TestVerifyRefusesChangesAndOldTimestamps(t *testing.T) {
	t.Parallel()
	v := load(t)
	valid := v.Headers[0]
	require.True(t, valid.Valid)
	at := time.Unix(v.Timestamp, 0)
	h := header(v.ID, v.Timestamp, valid.Signature)
	require.Error(t, Verify(v.Secret, h, []byte(v.Body+" "), at, Tolerance), "another body")
	require.Error(t, Verify(v.Secret, header(v.ID+"x", v.Timestamp, valid.Signature), []byte(v.Body), at, Tolerance), "another id")
	require.Error(t, Verify(v.Secret, header(v.ID, v.Timestamp+1, valid.Signature), []byte(v.Body), at, Tolerance), "another timestamp")
	require.Error(t, Verify("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", h, []byte(v.Body), at, Tolerance), "another secret")
	require.Error(t, Verify(v.Secret, h, []byte(v.Body), at.Add(Tolerance+time.Second), Tolerance), "too old")
	require.Error(t, Verify(v.Secret, h, []byte(v.Body), at.Add(-Tolerance-time.Second), Tolerance), "too new")
	require.NoError(t, Verify(v.Secret, h, []byte(v.Body), at.Add(Tolerance), Tolerance), "at the edge")
}
