package delivery_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/services/dispatcher/internal/delivery"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
)

// TestEveryDeliveryCarriesItsAckAndNackURLs: whatever the receiver will
// answer, it gets both URLs, on the public base URL, with a token it cannot
// make itself: the HMAC of "<hook id>.<lease>" under the project's secret,
// computed here without package asyncurl.
func TestEveryDeliveryCarriesItsAckAndNackURLs(t *testing.T) {
	t.Parallel()
	statuses := []int{http.StatusOK, http.StatusAccepted, http.StatusInternalServerError}
	var answered atomic.Int32
	receiver := fixture.StartReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(statuses[int(answered.Add(1)-1)%len(statuses)])
	})
	roots, err := egress.LoadRoots(fixture.CAFile(t, receiver))
	require.NoError(t, err)
	client, err := delivery.NewClient(delivery.Options{
		Timeout: 5 * time.Second, ExcerptBytes: 64, HeaderPrefix: "Sundial", UserAgent: userAgent, RootCAs: roots,
		Guard:     egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
		PublicURL: "https://sundial.example.com/",
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)

	secret := []byte("0123456789abcdef0123456789abcdef")
	for lease := int64(1); lease <= 3; lease++ {
		r := request(receiver.URL+"/x", "k")
		r.LeaseSeq, r.AsyncSecret = lease, secret
		send(t, client, r)
	}
	got := receiver.Received()
	require.Len(t, got, 3)
	seen := map[string]bool{}
	for i, req := range got {
		lease := i + 1
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte("0190b6a4-7f1e-7c3a-9f5e-2a1b3c4d5e6f." + strconv.Itoa(lease)))
		token := base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
		base := "https://sundial.example.com/v1/async/0190b6a4-7f1e-7c3a-9f5e-2a1b3c4d5e6f/" + strconv.Itoa(lease) + "/" + token
		require.Equal(t, base+"/ack", req.Header.Get("Sundial-Ack-URL"), "delivery %d", lease)
		require.Equal(t, base+"/nack", req.Header.Get("Sundial-Nack-URL"), "delivery %d", lease)
		require.False(t, seen[token], "a token per delivery")
		seen[token] = true
	}
}
