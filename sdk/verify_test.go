package sundial

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Sundial's vector "simple" (computed with openssl dgst -sha256 -hmac, as
// the service's own signer tests it).
const (
	vectorKey  = "sig_test_active_key"
	vectorTS   = 1700000000
	vectorBody = `{"id":"0190b1c2-0000-7000-8000-000000000001","data":{"hello":"world"}}`
	vectorSig  = "v1,b2dced01b71f755eb5a9ed3f90cc6e1090c4bac4ee45c101eee038f0a59fc992"
)

// The Standard Webhooks reference libraries' signing vector (the
// specification's example).
const (
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	standardID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	standardTS     = 1614265330
	standardBody   = `{"test": 2432232314}`
	standardSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func verifierAt(keys []string, at int64, opts ...VerifyOption) *Verifier {
	v := NewVerifier(keys, opts...)
	v.now = func() time.Time { return time.Unix(at, 0) }
	return v
}

func sundialHeader(sig string, ts int64) http.Header {
	h := http.Header{}
	h.Set("Sundial-Id", "0190b1c2-0000-7000-8000-000000000001")
	h.Set("Sundial-Timestamp", strconv.FormatInt(ts, 10))
	h.Set("Sundial-Signature", sig)
	return h
}

func standardHeader(sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", standardID)
	h.Set("webhook-timestamp", strconv.FormatInt(standardTS, 10))
	h.Set("webhook-signature", sig)
	return h
}

func TestVerifySundialVector(t *testing.T) {
	t.Parallel()
	v := verifierAt([]string{vectorKey}, vectorTS+60)
	require.NoError(t, v.Verify(sundialHeader(vectorSig, vectorTS), []byte(vectorBody)))
	rotation := "v1," + hex.EncodeToString(make([]byte, 32)) + " " + vectorSig
	require.NoError(t, v.Verify(sundialHeader(rotation, vectorTS), []byte(vectorBody)), "the second entry of a rotation")
	cases := map[string]struct {
		v      *Verifier
		header http.Header
		body   string
		want   error
	}{
		"altered body":         {v, sundialHeader(vectorSig, vectorTS), vectorBody + " ", ErrBadSignature},
		"wrong key":            {verifierAt([]string{"other"}, vectorTS), sundialHeader(vectorSig, vectorTS), vectorBody, ErrBadSignature},
		"too old":              {verifierAt([]string{vectorKey}, vectorTS+301), sundialHeader(vectorSig, vectorTS), vectorBody, ErrTimestamp},
		"from the future":      {verifierAt([]string{vectorKey}, vectorTS-301), sundialHeader(vectorSig, vectorTS), vectorBody, ErrTimestamp},
		"another version":      {v, sundialHeader("v2"+vectorSig[2:], vectorTS), vectorBody, ErrBadSignature},
		"no signature":         {v, http.Header{}, vectorBody, ErrNoSignature},
		"no keys":              {verifierAt(nil, vectorTS), sundialHeader(vectorSig, vectorTS), vectorBody, ErrNoKeys},
		"timestamp not a time": {v, func() http.Header { h := sundialHeader(vectorSig, vectorTS); h.Set("Sundial-Timestamp", "x"); return h }(), vectorBody, ErrTimestamp},
	}
	for name, c := range cases {
		require.ErrorIs(t, c.v.Verify(c.header, []byte(c.body)), c.want, name)
	}
	longer := verifierAt([]string{vectorKey}, vectorTS+600, WithTolerance(time.Hour))
	require.NoError(t, longer.Verify(sundialHeader(vectorSig, vectorTS), []byte(vectorBody)), "WithTolerance")
}

func TestVerifyStandardVector(t *testing.T) {
	t.Parallel()
	v := verifierAt([]string{standardSecret}, standardTS)
	cases := map[string]struct {
		sig   string
		valid bool
	}{
		"the reference signature":      {standardSig, true},
		"an invalid signature":         {"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=", false},
		"the valid one among others":   {"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= " + standardSig, true},
		"the right bytes, v2":          {"v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", false},
		"not base64":                   {"v1,!!!", false},
		"the Sundial scheme's entries": {vectorSig, false},
	}
	for name, c := range cases {
		err := v.Verify(standardHeader(c.sig), []byte(standardBody))
		if c.valid {
			require.NoError(t, err, name)
		} else {
			require.Error(t, err, name)
		}
	}
	require.ErrorIs(t, v.Verify(standardHeader(standardSig), []byte(standardBody+" ")), ErrBadSignature, "altered body")
	h := standardHeader(standardSig)
	h.Set("webhook-id", "msg_other")
	require.ErrorIs(t, v.Verify(h, []byte(standardBody)), ErrBadSignature, "another id")
	late := verifierAt([]string{standardSecret}, standardTS+301)
	require.ErrorIs(t, late.Verify(standardHeader(standardSig), []byte(standardBody)), ErrTimestamp, "too old")
}

// sign makes Sundial's headers for body at ts, signed by each key: what
// the service sends (the tests module checks against its own signer).
func sign(body []byte, ts int64, keys ...string) http.Header {
	sig := ""
	for i, k := range keys {
		if i > 0 {
			sig += " "
		}
		m := hmac.New(sha256.New, []byte(k))
		m.Write([]byte(strconv.FormatInt(ts, 10) + "."))
		m.Write(body)
		sig += "v1," + hex.EncodeToString(m.Sum(nil))
	}
	h := sundialHeader(sig, ts)
	return h
}

func TestVerifyTakesEitherScheme(t *testing.T) {
	t.Parallel()
	// A delivery under "both": a broken Sundial signature does not hide a
	// good Standard one, and the other way round.
	h := standardHeader(standardSig)
	h.Set("Sundial-Timestamp", strconv.FormatInt(standardTS, 10))
	h.Set("Sundial-Signature", "v1,00")
	v := verifierAt([]string{standardSecret}, standardTS)
	require.NoError(t, v.Verify(h, []byte(standardBody)), "a good Standard signature beside a broken Sundial one")
	h = sign([]byte(vectorBody), vectorTS, "k1")
	h.Set("webhook-id", "x")
	h.Set("webhook-timestamp", strconv.FormatInt(vectorTS, 10))
	h.Set("webhook-signature", "v1,AAAA")
	require.NoError(t, verifierAt([]string{"k1"}, vectorTS).Verify(h, []byte(vectorBody)), "a good Sundial signature beside a broken Standard one")
}

func TestVerifyWithAHeaderPrefix(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("Acme-Timestamp", strconv.FormatInt(vectorTS, 10))
	h.Set("Acme-Signature", vectorSig)
	require.NoError(t, verifierAt([]string{vectorKey}, vectorTS, WithHeaderPrefix("Acme")).Verify(h, []byte(vectorBody)), "prefix Acme")
	require.ErrorIs(t, verifierAt([]string{vectorKey}, vectorTS).Verify(h, []byte(vectorBody)), ErrNoSignature, "default prefix")
}

// TestVerifyReadsHeadersAsSpelled: headers built by hand in lower case (a
// framework's own header map, say) are read like canonical ones.
func TestVerifyReadsHeadersAsSpelled(t *testing.T) {
	t.Parallel()
	h := http.Header{
		"webhook-id":        {standardID},
		"webhook-timestamp": {strconv.FormatInt(standardTS, 10)},
		"webhook-signature": {standardSig},
	}
	require.NoError(t, verifierAt([]string{standardSecret}, standardTS).Verify(h, []byte(standardBody)))
}
