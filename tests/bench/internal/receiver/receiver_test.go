package receiver

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

type bundle struct {
	r *Receiver
}

// setup starts a plain-HTTP receiver with room for two arrivals.
func setup(t *testing.T) bundle {
	t.Helper()
	return bundle{r: startHTTP(t, 2)}
}

// startHTTP starts a plain-HTTP receiver with room for room arrivals,
// closed when the test ends.
func startHTTP(t *testing.T, room int) *Receiver {
	t.Helper()
	r, err := StartHTTP(room)
	require.NoError(t, err)
	// Not t.Context(): it is canceled before cleanups run, and a shutdown
	// that must wait for the client's idle connection would fail at once.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})
	return r
}

func post(t *testing.T, url, id string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"n":1}`))
	require.NoError(t, err)
	if id != "" {
		req.Header.Set("Sundial-Id", id)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// The plain-HTTP receiver records what `sundial listen` forwards as the
// HTTPS one records deliveries: the Sundial-Id and the arrival time, up to
// its capacity, counting the rest.
func TestHTTPReceiverRecordsArrivals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.True(t, strings.HasPrefix(b.r.URL(), "http://127.0.0.1:"), b.r.URL())
	id := uuid.New()
	before := time.Now()
	post(t, b.r.URL()+"/bench/listen", id.String())
	post(t, b.r.URL()+"/other", "")
	post(t, b.r.URL()+"/bench/listen", uuid.NewString())

	require.Equal(t, 3, b.r.Count())
	require.Equal(t, 1, b.r.Connections(), "the client's one keep-alive connection")
	require.Equal(t, 1, b.r.Overflow())
	got := b.r.Arrivals()
	require.Len(t, got, 2)
	require.Equal(t, id, got[0].ID)
	require.Equal(t, uuid.Nil, got[1].ID, "a request without Sundial-Id")
	at := b.r.At(got[0])
	require.False(t, at.Before(before.Add(-time.Millisecond)), "arrival %s before the request %s", at, before)
	require.False(t, at.After(time.Now()))
	rest, next := b.r.ArrivalsFrom(1)
	require.Equal(t, got[1:], rest)
	require.Equal(t, 2, next)
}
