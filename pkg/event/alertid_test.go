package event_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
)

func TestHookFailedAlertID(t *testing.T) {
	t.Parallel()
	hook := uuid.MustParse("0190a3c4-6f1e-7c2b-9d3e-1a2b3c4d5e6f")
	require.Equal(t, "hook.failed:0190a3c4-6f1e-7c2b-9d3e-1a2b3c4d5e6f:7", event.HookFailedAlertID(hook, 7))
	require.NotEqual(t, event.HookFailedAlertID(hook, 7), event.HookFailedAlertID(hook, 8),
		"a new lease is a new occurrence")
}

func TestEndpointRecoveredAlertID(t *testing.T) {
	t.Parallel()
	project := uuid.MustParse("0190b4c1-0000-7000-8000-000000000001")
	since := time.Date(2026, 11, 21, 12, 0, 0, 123456000, time.UTC)
	// The last part is the first 16 hex digits of sha256("api.example.com
	// /hooks/a"), written out so that a change of the rule (which would
	// change the id of every stored alert) fails here.
	got := event.EndpointRecoveredAlertID(project, "api.example.com", "/hooks/a", since)
	require.Equal(t, "endpoint.recovered:0190b4c1-0000-7000-8000-000000000001:1795262400123456000:03eef35f9d6ca99a", got)
	require.Equal(t, got, event.EndpointRecoveredAlertID(project, "api.example.com", "/hooks/a", since.In(time.FixedZone("x", 3600))),
		"the instant counts, not its zone")
	require.NotEqual(t, got, event.EndpointRecoveredAlertID(project, "api.example.com", "/hooks/b", since))
	require.NotEqual(t, got, event.EndpointRecoveredAlertID(project, "other.example.com", "/hooks/a", since))
	require.NotEqual(t, got, event.EndpointRecoveredAlertID(project, "api.example.com", "/hooks/a", since.Add(time.Microsecond)),
		"the next failing spell of the endpoint is another alert")
}

func TestEndpointPausedAlertID(t *testing.T) {
	t.Parallel()
	p := uuid.MustParse("0196a0e0-0000-7000-8000-000000000001")
	at := time.Unix(1700000000, 5)
	id := event.EndpointPausedAlertID(p, "api.example.com", at)
	require.Equal(t, id, event.EndpointPausedAlertID(p, "api.example.com", at))
	require.True(t, strings.HasPrefix(id, "endpoint.paused:"+p.String()+":1700000000000000005:"), id)
	require.NotEqual(t, id, event.EndpointPausedAlertID(p, "api.example.com", at.Add(time.Nanosecond)))
	require.NotEqual(t, id, event.EndpointPausedAlertID(p, "other.example.com", at))
}
