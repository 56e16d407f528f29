package delivery

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/egress"
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/dispatcher/internal/fixture"
)

func TestAnIdleConnectionKeepsNoLargeRequestBuffer(t *testing.T) {
	t.Parallel()
	// A 1 MiB payload's request buffer is dropped after its write, so a
	// pool of idle connections does not hold a megabyte each; a usual
	// one is kept for the next delivery.
	r := fixture.StartReceiver(t, nil)
	roots, err := egress.LoadRoots(fixture.CAFile(t, r))
	require.NoError(t, err)
	client, err := NewClient(Options{
		Timeout: 15 * time.Second, ExcerptBytes: 64, HeaderPrefix: "Sundial", UserAgent: "test",
		RootCAs: roots, Guard: egress.NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}),
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	idleBuffer := func(data string) int {
		res, err := client.Send(context.Background(), Request{
			HookID: "0190b6a4-7f1e-7c3a-9f5e-2a1b3c4d5e6f", URL: r.URL + "/hooks", Path: "/hooks",
			Data: json.RawMessage(data), Keys: []string{"whsec_k"},
		})
		require.NoError(t, err)
		require.Equal(t, eventv1.Outcome_OUTCOME_SUCCESS, res.Outcome, res.Error)
		client.conns.mu.Lock()
		defer client.conns.mu.Unlock()
		for _, h := range client.conns.hosts {
			require.Len(t, h.idle, 1)
			return h.idle[0].out.Cap()
		}
		t.Fatal("no idle connection")
		return 0
	}
	require.Positive(t, idleBuffer(`{"small":true}`))
	require.Zero(t, idleBuffer(`"`+strings.Repeat("x", 1<<20)+`"`))
	require.Positive(t, idleBuffer(`{"small":true}`))
}
