package sdk

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sundial "github.com/sundial-run/sundial/sdk"
)

// waitStatus waits until the hook has the status.
func (b *bundle) waitStatus(t *testing.T, id string, status sundial.HookStatus) sundial.Hook {
	t.Helper()
	var last sundial.Hook
	require.Eventually(t, func() bool {
		h, err := b.client.Hooks.Get(b.ctx, id)
		require.NoError(t, err)
		last = h
		return h.Status == status
	}, 20*time.Second, 50*time.Millisecond, "hook %s never became %s", id, status)
	return last
}

// accepting makes the receiver the SDK's handler, verifying with the
// project's signing key and answering each delivery 202 with a ten-minute
// timeout; next returns the next delivery it accepted.
func (b *bundle) accepting(t *testing.T) (next func() *sundial.Delivery) {
	t.Helper()
	keys, err := b.client.SigningKeys.List(b.ctx)
	require.NoError(t, err)
	got := make(chan *sundial.Delivery, 1)
	b.receive(sundial.NewHandler([]string{keys[0].Key}, func(_ context.Context, d *sundial.Delivery) sundial.Result {
		got <- d
		return sundial.Accept(10 * time.Minute)
	}))
	return func() *sundial.Delivery {
		t.Helper()
		select {
		case d := <-got:
			return d
		case <-time.After(20 * time.Second):
			t.Fatal("no delivery reached the handler")
			return nil
		}
	}
}

// TestHandlerAcceptsAndAcksARealDelivery: the dispatcher delivers to the
// SDK's handler, which answers 202 with a timeout; the SDK's Async.Ack on
// the delivery's ack URL completes the hook.
func TestHandlerAcceptsAndAcksARealDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	next := b.accepting(t)

	h, err := b.client.Hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/jobs", Data: map[string]any{"job": 7}, PostAt: time.Now()})
	require.NoError(t, err)
	d := next()
	require.Equal(t, h.ID, d.ID)
	require.Equal(t, "/jobs", d.Path)
	require.JSONEq(t, `{"job": 7}`, string(d.Data))
	require.NotEmpty(t, d.AckURL)
	require.NotEmpty(t, d.NackURL)

	// The 202 and its timeout were recorded: the attempt waits.
	require.Eventually(t, func() bool {
		as, err := b.client.Hooks.Attempts(b.ctx, h.ID)
		require.NoError(t, err)
		return len(as) == 1 && as[0].Async != nil && as[0].Async.State == "waiting"
	}, 20*time.Second, 50*time.Millisecond)
	as, err := b.client.Hooks.Attempts(b.ctx, h.ID)
	require.NoError(t, err)
	require.Equal(t, 600, as[0].Async.TimeoutSecs, "Accept's timeout reached the service")

	answer, err := sundial.NewClient("", sundial.WithHTTPClient(b.httpClient)).Async.Ack(b.ctx, d.AckURL, map[string]any{"processed": 7})
	require.NoError(t, err)
	require.Equal(t, "completed", answer.Status)
	b.waitStatus(t, h.ID, sundial.StatusCompleted)
	as, err = b.client.Hooks.Attempts(b.ctx, h.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"processed": 7}`, string(as[0].AckBody))

	// A repeat changes nothing; a nack after the ack is the same delivery's
	// second answer: the first won.
	answer, err = b.client.Async.Nack(b.ctx, d.NackURL, "too late")
	require.NoError(t, err)
	require.Equal(t, "completed", answer.Status)
}

// TestHandlerVerifiesStandardWebhooksDeliveries: a project whose scheme is
// standard signs only webhook-signature; the handler, given the key's
// standardSecret, acks it, and a handler with another key answers 401, a
// failed attempt.
func TestHandlerVerifiesStandardWebhooksDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	_, err := b.client.Project.Update(b.ctx, sundial.ProjectPatch{SignatureScheme: sundial.Ptr(sundial.SchemeStandard)})
	require.NoError(t, err)
	keys, err := b.client.SigningKeys.List(b.ctx)
	require.NoError(t, err)
	got := make(chan *sundial.Delivery, 1)
	b.receive(sundial.NewHandler([]string{keys[0].StandardSecret}, func(_ context.Context, d *sundial.Delivery) sundial.Result {
		got <- d
		return sundial.Ack()
	}))
	h, err := b.client.Hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/std", Data: map[string]any{}, PostAt: time.Now()})
	require.NoError(t, err)
	b.waitStatus(t, h.ID, sundial.StatusCompleted)
	d := <-got
	require.Empty(t, d.Header.Get("Sundial-Signature"), "standard sends webhook-signature alone")
	require.NotEmpty(t, d.Header.Get("webhook-signature"))

	b.receive(sundial.NewHandler([]string{"sdsig_someone_else"}, func(context.Context, *sundial.Delivery) sundial.Result {
		t.Error("a delivery signed with another key reached the function")
		return sundial.Ack()
	}))
	refused, err := b.client.Hooks.Schedule(b.ctx, sundial.ScheduleHookRequest{Path: "/std", Data: map[string]any{}, PostAt: time.Now(),
		RetryOverride: &sundial.RetryOverride{MinRetries: 1, DelaySecs: 60, Strategy: sundial.StrategyFixed}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		as, err := b.client.Hooks.Attempts(b.ctx, refused.ID)
		require.NoError(t, err)
		return len(as) == 1
	}, 20*time.Second, 50*time.Millisecond)
	as, err := b.client.Hooks.Attempts(b.ctx, refused.ID)
	require.NoError(t, err)
	require.Equal(t, "failure", as[0].Outcome)
	require.Equal(t, 401, as[0].StatusCode)
}
