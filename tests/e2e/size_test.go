package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/bus"
	"github.com/sundial-run/sundial/pkg/envconf"
	dispatcher "github.com/sundial-run/sundial/services/dispatcher/app"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	notifier "github.com/sundial-run/sundial/services/notifier/app"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
)

// nats-server's own default max_payload, 1 MiB, which a deployment that
// does not configure it runs with.
const defaultMaxPayload = 1 << 20

// dataOf returns a JSON object of exactly n bytes as stored and sent
// (PostgreSQL's jsonb text puts a space after the colon).
func dataOf(n int) json.RawMessage {
	const frame = len(`{"x": ""}`)
	return json.RawMessage(`{"x":"` + strings.Repeat("a", n-frame) + `"}`)
}

// TestNearLimitHookIsDeliveredOrRefused reproduces the size attack
// on nats-server's default max_payload, with the gateway's default
// SUNDIAL_MAX_DATA_BYTES (1 MiB): a hook of 1 MiB of data used to be
// accepted with 201 and never sent (its DueHook exceeded max_payload, every
// publish failed, the lease re-drove it). Now the largest data the gateway
// accepts, with the longest path, is delivered, and one byte more is a 413
// naming data.
func TestNearLimitHookIsDeliveredOrRefused(t *testing.T) {
	t.Parallel()
	// A lease far longer than the suite's 2 s: this test is about size, and
	// on a loaded machine one 1 MiB hook's claim, publication and delivery
	// took longer than 2 s six times in a row (re-driven until failed).
	b := setup(t, options{natsMaxPayload: defaultMaxPayload, env: map[string]string{"SUNDIAL_LEASE_DURATION": "30s"}})
	limit := int(bus.MaxHookData(defaultMaxPayload))
	path := "/" + strings.Repeat("p", 2047)

	resp, raw := b.do(t, http.MethodPost, "/v1/hooks", map[string]any{"path": "/x", "postIn": "1s", "data": dataOf(limit + 1)})
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, string(raw))
	var refused struct {
		Details []struct{ Field, Message string }
	}
	require.NoError(t, json.Unmarshal(raw, &refused))
	require.Len(t, refused.Details, 1)
	require.Equal(t, "data", refused.Details[0].Field)
	require.Contains(t, refused.Details[0].Message, fmt.Sprint(limit))

	resp, raw = b.do(t, http.MethodPost, "/v1/hooks", map[string]any{"path": "/x", "postIn": "1s", "data": dataOf(1 << 20)})
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "SUNDIAL_MAX_DATA_BYTES itself no longer fits: %s", raw)

	created := b.schedule(t, map[string]any{"path": path, "postIn": "1s", "data": dataOf(limit)})
	b.waitStatus(t, created.ID, "completed", 30*time.Second)
	got := b.receiver.Received()
	require.Len(t, got, 1)
	var body struct {
		Data json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(got[0].Body, &body))
	require.Len(t, body.Data, limit)
}

// TestManyLargeHooksDueTogetherAreAllDelivered makes one claim's hooks
// weigh far more than max_payload: hooks with the longest paths (what a
// bound on data alone let a DueHooks message grow to megabytes with) and
// hooks of the largest data, all due at the same instant, in claims of up
// to 1,000 hooks. Each due message must stay under max_payload, and every
// hook arrive.
func TestManyLargeHooksDueTogetherAreAllDelivered(t *testing.T) {
	t.Parallel()
	b := setup(t, options{
		natsMaxPayload: defaultMaxPayload,
		env: map[string]string{
			"SUNDIAL_SCHEDULER_BATCH_SIZE": "1000",
			// One claim by the poll takes every hook at once.
			"SUNDIAL_SCHEDULER_PREFETCH": "0",
			// Deliveries of a megabyte each may take longer than the
			// suite's short lease on a busy machine.
			"SUNDIAL_LEASE_DURATION": "30s",
		},
	})
	// 403 creates back to back come near a new key's rate limit (100
	// requests a second, bursts of 200) on a fast machine: lifted.
	b.setPlan(t, b.creds.ProjectID, 1_000_000)
	limit := int(bus.MaxHookData(defaultMaxPayload))
	path := "/" + strings.Repeat("p", 2047)
	at := time.Now().Add(20 * time.Second).UTC().Format(time.RFC3339Nano)
	want := map[string]bool{}
	// 400 hooks of 4 KiB besides their data make a claim of 1.7 MB, then
	// three of the largest data.
	const hooks = 403
	for i := range hooks {
		data := dataOf(64)
		if i >= hooks-3 {
			data = dataOf(limit)
		}
		h := b.schedule(t, map[string]any{"path": path, "postAt": at, "data": data})
		want[h.ID] = true
	}
	require.Len(t, want, hooks)
	delivered := 0
	require.Eventually(t, func() bool {
		delivered = len(b.receiver.Received())
		return delivered >= hooks
	}, 90*time.Second, 100*time.Millisecond, "delivered only some of %d hooks (see the log)", hooks)
	t.Logf("delivered %d of %d", delivered, hooks)
	for _, r := range b.receiver.Received() {
		var body struct{ ID string }
		require.NoError(t, json.Unmarshal(r.Body, &body))
		require.True(t, want[body.ID], "unknown or repeated hook %s", body.ID)
		delete(want, body.ID)
	}
	require.Empty(t, want)
}

// TestServicesRefuseASmallMaxPayload starts each service against a NATS
// server whose max_payload is under nats-server's default: each refuses,
// saying what to change.
func TestServicesRefuseASmallMaxPayload(t *testing.T) {
	t.Parallel()
	b := setup(t, options{natsMaxPayload: 512 << 10, without: map[string]bool{
		"gateway": true, "scheduler": true, "dispatcher": true, "notifier": true,
	}})
	lookup := envconf.Map(b.env)
	log := b.logger("refused")
	gw, err := gateway.ConfigFromEnv(lookup)
	require.NoError(t, err)
	sc, err := scheduler.ConfigFromEnv(lookup)
	require.NoError(t, err)
	di, err := dispatcher.ConfigFromEnv(lookup)
	require.NoError(t, err)
	no, err := notifier.ConfigFromEnv(lookup)
	require.NoError(t, err)
	var errs []error
	_, err = gateway.New(b.ctx, gw, log)
	errs = append(errs, err)
	_, err = scheduler.New(b.ctx, sc, log)
	errs = append(errs, err)
	_, err = dispatcher.New(b.ctx, di, log)
	errs = append(errs, err)
	_, err = notifier.New(b.ctx, no, log)
	errs = append(errs, err)
	require.Len(t, errs, 4)
	for _, err := range errs {
		require.ErrorContains(t, err, "max_payload 524288 bytes")
		require.ErrorContains(t, err, "raise max_payload in the nats-server configuration")
	}
}
