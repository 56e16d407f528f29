package sundial

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
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
	if err := v.Verify(sundialHeader(vectorSig, vectorTS), []byte(vectorBody)); err != nil {
		t.Fatal(err)
	}
	rotation := "v1," + hex.EncodeToString(make([]byte, 32)) + " " + vectorSig
	if err := v.Verify(sundialHeader(rotation, vectorTS), []byte(vectorBody)); err != nil {
		t.Fatalf("the second entry of a rotation: %v", err)
	}
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
		if err := c.v.Verify(c.header, []byte(c.body)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	longer := verifierAt([]string{vectorKey}, vectorTS+600, WithTolerance(time.Hour))
	if err := longer.Verify(sundialHeader(vectorSig, vectorTS), []byte(vectorBody)); err != nil {
		t.Fatalf("WithTolerance: %v", err)
	}
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
		if (err == nil) != c.valid {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := v.Verify(standardHeader(standardSig), []byte(standardBody+" ")); !errors.Is(err, ErrBadSignature) {
		t.Errorf("altered body: %v", err)
	}
	h := standardHeader(standardSig)
	h.Set("webhook-id", "msg_other")
	if err := v.Verify(h, []byte(standardBody)); !errors.Is(err, ErrBadSignature) {
		t.Errorf("another id: %v", err)
	}
	late := verifierAt([]string{standardSecret}, standardTS+301)
	if err := late.Verify(standardHeader(standardSig), []byte(standardBody)); !errors.Is(err, ErrTimestamp) {
		t.Errorf("too old: %v", err)
	}
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
	if err := v.Verify(h, []byte(standardBody)); err != nil {
		t.Fatal(err)
	}
	h = sign([]byte(vectorBody), vectorTS, "k1")
	h.Set("webhook-id", "x")
	h.Set("webhook-timestamp", strconv.FormatInt(vectorTS, 10))
	h.Set("webhook-signature", "v1,AAAA")
	if err := verifierAt([]string{"k1"}, vectorTS).Verify(h, []byte(vectorBody)); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyWithAHeaderPrefix(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	h.Set("Acme-Timestamp", strconv.FormatInt(vectorTS, 10))
	h.Set("Acme-Signature", vectorSig)
	if err := verifierAt([]string{vectorKey}, vectorTS, WithHeaderPrefix("Acme")).Verify(h, []byte(vectorBody)); err != nil {
		t.Fatal(err)
	}
	if err := verifierAt([]string{vectorKey}, vectorTS).Verify(h, []byte(vectorBody)); !errors.Is(err, ErrNoSignature) {
		t.Fatalf("default prefix: %v", err)
	}
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
	if err := verifierAt([]string{standardSecret}, standardTS).Verify(h, []byte(standardBody)); err != nil {
		t.Fatal(err)
	}
}
