package delivery_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
)

// headerMap is a recorded side as a map, for comparing.
func headerMap(h *eventv1.Headers) map[string][]string {
	m := map[string][]string{}
	for _, f := range h.GetFields() {
		m[f.GetName()] = f.GetValues()
	}
	return m
}

// lines counts a recorded side's values.
func lines(h *eventv1.Headers) int {
	n := 0
	for _, f := range h.GetFields() {
		n += len(f.GetValues())
	}
	return n
}

// TestSendRecordsBothSidesHeaders: the attempt records the request's headers
// as the receiver got them (Host and Content-Length included), and the
// answer's as sent, a name's several values in order; the Authorization
// value and the ack and nack URLs' token are redacted on both sides, as is a
// cookie's value; a long value is cut.
func TestSendRecordsBothSidesHeaders(t *testing.T) {
	t.Parallel()
	const auth = "Bearer project-secret-value"
	long := strings.Repeat("é", 700) // 1400 bytes
	b := setup(t, options{answer: func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["X-Multi"] = []string{"first", "second", "third"}
		h.Add("Set-Cookie", "sid=abc123; Path=/; HttpOnly")
		h.Add("Set-Cookie", "novalue")
		h.Set("X-Long", long)
		h.Set("X-Echo-Auth", "got "+r.Header.Get("Authorization"))
		h.Set("X-Echo-Ack", r.Header.Get("Sundial-Ack-URL"))
		h.Set("Authorization", "Basic c2VjcmV0")
		h.Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok"))
	}})
	r := request(b.receiver.URL+"/hooks/remind?user=7&kind=a", "whsec_active", "whsec_retiring")
	r.Authorization = auth
	res := send(t, b.client, r)
	require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome)
	got := b.receiver.Received()[0]

	req := headerMap(res.RequestHeaders)
	require.Zero(t, res.RequestHeaders.GetOmitted())
	want := map[string][]string{"Host": {strings.TrimPrefix(b.receiver.URL, "https://")}}
	for name, values := range got.Header {
		want[name] = values
	}
	// The receiver's server canonicalised the names; the record keeps them
	// as sent.
	for _, spelled := range []string{"Sundial-Ack-URL", "Sundial-Nack-URL"} {
		want[spelled] = want[http.CanonicalHeaderKey(spelled)]
		delete(want, http.CanonicalHeaderKey(spelled))
	}
	ack, nack := got.Header.Get("Sundial-Ack-URL"), got.Header.Get("Sundial-Nack-URL")
	token := strings.Split(ack, "/")[len(strings.Split(ack, "/"))-2]
	want["Authorization"] = []string{"[redacted]"}
	want["Sundial-Ack-URL"] = []string{strings.Replace(ack, token, "[redacted]", 1)}
	want["Sundial-Nack-URL"] = []string{strings.Replace(nack, token, "[redacted]", 1)}
	require.Equal(t, want, req)
	require.Equal(t, []string{strconv.Itoa(len(got.Body))}, req["Content-Length"])
	require.Contains(t, req["Sundial-Signature"][0], " v1,", "both keys' signatures")

	resp := headerMap(res.ResponseHeaders)
	require.Zero(t, res.ResponseHeaders.GetOmitted())
	require.Equal(t, []string{"first", "second", "third"}, resp["X-Multi"])
	require.Equal(t, []string{"sid=[redacted]; Path=/; HttpOnly", "[redacted]"}, resp["Set-Cookie"])
	require.Equal(t, []string{strings.Repeat("é", 512) + delivery.RecordedCut}, resp["X-Long"])
	require.Equal(t, []string{"[redacted]"}, resp["X-Echo-Auth"])
	require.Equal(t, []string{"[redacted]"}, resp["X-Echo-Ack"])
	require.Equal(t, []string{"[redacted]"}, resp["Authorization"])
	require.Equal(t, []string{"text/plain"}, resp["Content-Type"])
	require.Equal(t, []string{"2"}, resp["Content-Length"])
	require.NotEmpty(t, resp["Date"])

	for _, side := range []*eventv1.Headers{res.RequestHeaders, res.ResponseHeaders} {
		for _, f := range side.GetFields() {
			for _, v := range f.GetValues() {
				require.NotContains(t, v, "project-secret-value")
				require.NotContains(t, v, token)
			}
		}
	}
}

// TestSendRecordsAChunkedAnswersTransferEncoding: Go's reader takes
// Transfer-Encoding out of the headers; the record has it as it came.
func TestSendRecordsAChunkedAnswersTransferEncoding(t *testing.T) {
	t.Parallel()
	b := setup(t, options{answer: func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("part one "))
		w.(http.Flusher).Flush()
		_, _ = w.Write([]byte("part two"))
	}})
	res := send(t, b.client, request(b.receiver.URL+"/x", "k"))
	require.Equal(t, "part one part two", res.Excerpt)
	require.Equal(t, []string{"chunked"}, headerMap(res.ResponseHeaders)["Transfer-Encoding"])
}

// TestSendBoundsTheAnswersHeaders: an answer with more header lines than
// an attempt records keeps MaxRecordedLines of them, in order of name, and
// counts the rest.
func TestSendBoundsTheAnswersHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, options{answer: func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h["Date"] = nil // not sent
		for i := range 70 {
			h.Set(fmt.Sprintf("X-H-%02d", i), "v")
		}
		w.WriteHeader(http.StatusOK)
	}})
	res := send(t, b.client, request(b.receiver.URL+"/x", "k"))
	// The 70 and Content-Length: 0.
	require.Equal(t, delivery.MaxRecordedLines, lines(res.ResponseHeaders))
	require.EqualValues(t, 71-delivery.MaxRecordedLines, res.ResponseHeaders.GetOmitted())
	resp := headerMap(res.ResponseHeaders)
	require.Contains(t, resp, "Content-Length")
	require.Contains(t, resp, "X-H-48")
	require.NotContains(t, resp, "X-H-49")
}

// TestSendRecordsTheRequestOfAFailedConnection: no answer, no answer's
// headers; the request's are still recorded.
func TestSendRecordsTheRequestOfAFailedConnection(t *testing.T) {
	t.Parallel()
	b := setup(t, options{untrusted: true})
	res := send(t, b.client, request(b.receiver.URL+"/x", "k"))
	require.Equal(t, eventv1.Outcome_OUTCOME_FAILURE, res.Outcome)
	require.Contains(t, res.Error, "TLS")
	require.Nil(t, res.ResponseHeaders)
	require.Equal(t, []string{"application/json"}, headerMap(res.RequestHeaders)["Content-Type"])
}
