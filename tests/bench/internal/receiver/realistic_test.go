package receiver

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/bench/internal/baseline/delivery"
)

const testKey = "whsec-test-key"

// signedPost posts body to url with id, signed with key as a sender
// following Sundial's scheme does (the baseline's signer), and returns the
// status.
func signedPost(t *testing.T, url, id, key, body string, at time.Time) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Sundial-Id", id)
	req.Header.Set("Sundial-Timestamp", strconv.FormatInt(at.Unix(), 10))
	req.Header.Set("Sundial-Signature", "v1,"+strings.Repeat("0", 64)+" "+delivery.Sign(key, at.Unix(), []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// Verify accepts any entry of the header that signs the timestamp and
// body with the key, and nothing else.
func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"x","data":{"n":1}}`)
	header := func(key string, ts int64, b []byte) http.Header {
		h := http.Header{}
		h.Set("Sundial-Timestamp", strconv.FormatInt(ts, 10))
		h.Set("Sundial-Signature", "v1,deadbeef "+delivery.Sign(key, ts, b))
		return h
	}
	require.True(t, Verify(testKey, header(testKey, now.Unix(), body), body, now))
	require.False(t, Verify(testKey, header("other", now.Unix(), body), body, now), "another key")
	require.False(t, Verify(testKey, header(testKey, now.Unix(), body), []byte(`{}`), now), "another body")
	require.False(t, Verify(testKey, header(testKey, now.Add(-6*time.Minute).Unix(), body), body, now), "too old")
	require.False(t, Verify(testKey, http.Header{}, body, now), "unsigned")
}

// A realistic receiver refuses a bad signature, answers each path as its
// kind says, fails a FailFirst hook's first arrival only, and records when
// it answered.
func TestRealisticReceiverAnswersPathByPath(t *testing.T) {
	t.Parallel()
	r := startHTTP(t, 10)
	flaky := uuid.New()
	r.SetRealistic(&Realistic{SigningKey: testKey, Behaviour: Behaviour{
		Paths:     map[string]Kind{"/ok": Healthy, "/fail": Failing, "/async": Async, "/slow": Slow},
		FailFirst: map[uuid.UUID]*atomic.Bool{flaky: {}},
		Quick:     Span{Min: time.Millisecond, Max: 2 * time.Millisecond},
		Slow:      Span{Min: 20 * time.Millisecond, Max: 20 * time.Millisecond},
	}})
	now := time.Now()
	post := func(path, id, key string) int { return signedPost(t, r.URL()+path, id, key, `{"n":1}`, now) }

	require.Equal(t, http.StatusUnauthorized, post("/ok", uuid.NewString(), "not-the-key"))
	require.Equal(t, 1, r.BadSignatures())
	require.Equal(t, http.StatusInternalServerError, post("/ok", flaky.String(), testKey), "a flaky hook's first arrival")
	require.Equal(t, http.StatusOK, post("/ok", flaky.String(), testKey), "its retry")
	require.Equal(t, http.StatusInternalServerError, post("/fail", uuid.NewString(), testKey))
	require.Equal(t, http.StatusAccepted, post("/async", uuid.NewString(), testKey))
	require.Equal(t, http.StatusOK, post("/slow", uuid.NewString(), testKey))
	require.Equal(t, http.StatusOK, post("/elsewhere", uuid.NewString(), testKey), "a path of no kind answers 200")
	require.Equal(t, 1, r.BadSignatures())

	got := r.Arrivals()
	require.Len(t, got, 7)
	for _, a := range got {
		require.GreaterOrEqual(t, a.Answered, a.Since, "answered after it arrived")
	}
	require.GreaterOrEqual(t, got[5].Answered-got[5].Since, 20*time.Millisecond, "the slow path's delay")
}

// A realistic receiver with routes counts the requests on another path
// than their hook's, or of a hook it does not know, and answers them all.
func TestRealisticReceiverCountsMisrouted(t *testing.T) {
	t.Parallel()
	r := startHTTP(t, 10)
	keyed, flow := uuid.New(), uuid.New()
	r.SetRealistic(&Realistic{SigningKey: testKey, Routes: map[uuid.UUID]string{keyed: "/keyed", flow: "/flow"}})
	now := time.Now()
	post := func(path string, id uuid.UUID) int {
		return signedPost(t, r.URL()+path, id.String(), testKey, `{"n":1}`, now)
	}
	require.Equal(t, http.StatusOK, post("/keyed", keyed))
	require.Equal(t, http.StatusOK, post("/flow", flow))
	require.Zero(t, r.Misrouted())
	require.Equal(t, http.StatusOK, post("/flow", keyed), "answered, and counted")
	require.Equal(t, http.StatusOK, post("/keyed", uuid.New()), "a hook it does not know")
	require.Equal(t, 2, r.Misrouted())
	require.Zero(t, r.BadSignatures())
}

// A path with its own signing key is verified with that key alone: another
// project's hooks, signed with that project's key.
func TestRealisticReceiverVerifiesAPathWithItsOwnKey(t *testing.T) {
	t.Parallel()
	r := startHTTP(t, 10)
	const otherKey = "whsec-other-key"
	r.SetRealistic(&Realistic{SigningKey: testKey, PathKeys: map[string]string{"/other": otherKey}})
	now := time.Now()
	post := func(path, key string) int { return signedPost(t, r.URL()+path, uuid.NewString(), key, `{"n":1}`, now) }

	require.Equal(t, http.StatusOK, post("/mine", testKey))
	require.Equal(t, http.StatusOK, post("/other", otherKey))
	require.Zero(t, r.BadSignatures())
	require.Equal(t, http.StatusUnauthorized, post("/other", testKey), "the project's key on the other's path")
	require.Equal(t, http.StatusUnauthorized, post("/mine", otherKey), "the other's key on the project's path")
	require.Equal(t, 2, r.BadSignatures())
}
