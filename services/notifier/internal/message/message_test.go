package message_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/services/notifier/internal/message"
)

var (
	groupID   = uuid.MustParse("0b0e5f4a-4d3c-4f7e-9b1a-5c2d3e4f5a6b")
	projectID = uuid.MustParse("11111111-2222-4333-8444-555555555555")
	created   = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	occurred  = time.Date(2026, 11, 21, 11, 58, 0, 500_000_000, time.UTC)
)

func hookAlert(i int, domain, path, errText string) *eventv1.Alert {
	return &eventv1.Alert{
		AlertId:    fmt.Sprintf("hook.failed:hook-%d:1", i),
		Kind:       eventv1.AlertKind_ALERT_KIND_HOOK_FAILED,
		ProjectId:  projectID.String(),
		OccurredAt: timestamppb.New(occurred),
		HookId:     fmt.Sprintf("hook-%d", i),
		Domain:     domain,
		Path:       path,
		Error:      errText,
		Attempts:   3,
	}
}

func base(kind string, alerts ...*eventv1.Alert) message.Message {
	return message.Message{
		GroupID:      groupID,
		Kind:         kind,
		Project:      message.Project{ID: projectID, Name: "acme", Domain: "api.acme.com"},
		Alerts:       alerts,
		Total:        len(alerts),
		DashboardURL: "https://dash.sundial.test/",
		CreatedAt:    created,
	}
}

func failed(n int) message.Message {
	var alerts []*eventv1.Alert
	for i := range min(n, message.MaxListed) {
		alerts = append(alerts, hookAlert(i, "api.acme.com", "/webhooks/x", "HTTP 500"))
	}
	m := base(message.KindHookFailed, alerts...)
	m.Total = n
	return m
}

func recovered() message.Message {
	a := hookAlert(7, "api.acme.com", "/webhooks/x", "")
	a.AlertId = "endpoint.recovered:p:t:abc"
	a.Kind = eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED
	a.Attempts = 50 // hooks that failed on the endpoint
	return base(message.KindEndpointRecovered, a)
}

func quota() message.Message {
	return base(message.KindQuotaThreshold, &eventv1.Alert{
		AlertId:          "quota:p:2026-11-01:75",
		Kind:             eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD,
		ProjectId:        projectID.String(),
		OccurredAt:       timestamppb.New(occurred),
		ThresholdPercent: 75,
		Usage:            750,
		Quota:            1000,
		PeriodStart:      timestamppb.New(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)),
	})
}

func test() message.Message {
	return base(message.KindChannelTest, &eventv1.Alert{
		AlertId:    "channel.test:" + groupID.String(),
		Kind:       eventv1.AlertKind_ALERT_KIND_CHANNEL_TEST,
		ProjectId:  projectID.String(),
		OccurredAt: timestamppb.New(occurred),
		ChannelId:  "c1",
	})
}

func TestSubject(t *testing.T) {
	t.Parallel()
	mixed := failed(3)
	mixed.Alerts[2].Domain = "other.acme.com"
	crlf := test()
	crlf.Project.Name = "acme\r\nBcc: victim@example.com"
	unnamed := test()
	unnamed.Project.Name = ""
	for name, tc := range map[string]struct {
		m    message.Message
		want string
	}{
		"50 failed":     {failed(50), "[Sundial] acme: 50 hooks failed on api.acme.com/webhooks/x"},
		"1 failed":      {failed(1), "[Sundial] acme: 1 hook failed on api.acme.com/webhooks/x"},
		"two endpoints": {mixed, "[Sundial] acme: 3 hooks failed on api.acme.com/webhooks/x and other endpoints"},
		"recovered":     {recovered(), "[Sundial] acme: api.acme.com/webhooks/x recovered"},
		"quota":         {quota(), "[Sundial] acme: 75% of the hook quota used"},
		"test":          {test(), "[Sundial] acme: test message"},
		"line breaks":   {crlf, "[Sundial] acme  Bcc: victim@example.com: test message"},
		"no name":       {unnamed, "[Sundial] " + projectID.String() + ": test message"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := tc.m.Subject()
			require.Equal(t, tc.want, got)
			require.NotContains(t, got, "\r")
			require.NotContains(t, got, "\n")
		})
	}
}

func TestTextHookFailed(t *testing.T) {
	t.Parallel()
	m := failed(2)
	m.Alerts[1].Error = "timeout after 10s"
	want := `acme: 2 hooks failed on api.acme.com/webhooks/x. Their retries ran out.

- api.acme.com/webhooks/x, hook hook-0, 3 attempts
  Error: HTTP 500
  https://dash.sundial.test/p/11111111-2222-4333-8444-555555555555/hooks/hook-0
- api.acme.com/webhooks/x, hook hook-1, 3 attempts
  Error: timeout after 10s
  https://dash.sundial.test/p/11111111-2222-4333-8444-555555555555/hooks/hook-1

Project acme: https://dash.sundial.test/p/11111111-2222-4333-8444-555555555555
Alert group: 0b0e5f4a-4d3c-4f7e-9b1a-5c2d3e4f5a6b
`
	require.Equal(t, want, m.Text())
}

func TestRenderings(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		m       message.Message
		want    []string
		notWant []string
	}{
		"50 failed": {
			m: failed(50),
			want: []string{"50 hooks failed on api.acme.com/webhooks/x", "hook-0", "hook-9", "HTTP 500",
				"and 40 more", "https://dash.sundial.test/p/11111111-2222-4333-8444-555555555555/hooks/hook-9", groupID.String(),
				"https://dash.sundial.test/p/" + projectID.String()},
			notWant: []string{"hook-10"},
		},
		"10 failed": {
			m:       failed(10),
			want:    []string{"10 hooks failed", "hook-9"},
			notWant: []string{"more"},
		},
		"recovered": {
			m: recovered(),
			want: []string{"api.acme.com/webhooks/x recovered", "succeeded again after 50 hooks to it failed",
				"https://dash.sundial.test/p/11111111-2222-4333-8444-555555555555/hooks/hook-7"},
			notWant: []string{"attempt"},
		},
		"quota": {
			m:    quota(),
			want: []string{"75% of the hook quota used", "750 of 1000 hooks", "2026-11-01"},
		},
		"test": {
			m:    test(),
			want: []string{"test message", "This channel works", groupID.String()},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			chat := chatText(t, tc.m)
			for _, body := range []string{tc.m.Text(), tc.m.HTML(), chat} {
				for _, w := range tc.want {
					require.Contains(t, body, w)
				}
				for _, w := range tc.notWant {
					require.NotContains(t, body, w)
				}
			}
		})
	}
}

// hostile is a group whose user-written parts try markup in every format.
func hostile() message.Message {
	m := failed(1)
	m.Project.Name = `<b>Ac&me</b>`
	m.Alerts[0].Path = `/x?a=1&b=<2>`
	m.Alerts[0].Error = `HTTP 500: <script>alert("x")</script> | <!channel>`
	return m
}

func TestHTMLEscapes(t *testing.T) {
	t.Parallel()
	html := hostile().HTML()
	require.NotContains(t, html, "<script>")
	require.NotContains(t, html, "<b>Ac")
	require.Contains(t, html, "&lt;script&gt;")
	require.Contains(t, html, "&lt;b&gt;Ac&amp;me&lt;/b&gt;")
	require.Contains(t, html, "/x?a=1&amp;b=&lt;2&gt;")
	require.Contains(t, html, `<a href="https://dash.sundial.test/p/11111111-2222-4333-8444-555555555555/hooks/hook-0">`)
}

func TestChatEscapes(t *testing.T) {
	t.Parallel()
	text := chatText(t, hostile())
	require.NotContains(t, text, "<script>")
	require.NotContains(t, text, "<!channel>")
	require.Contains(t, text, "&lt;script&gt;")
	require.Contains(t, text, "&lt;!channel&gt;")
	require.Contains(t, text, "&lt;b&gt;Ac&amp;me&lt;/b&gt;")
	require.Contains(t, text, "/x?a=1&amp;b=&lt;2&gt;")
	require.Contains(t, text, "<https://dash.sundial.test/p/11111111-2222-4333-8444-555555555555/hooks/hook-0|hook-0>")
	require.Contains(t, text, "<https://dash.sundial.test/p/"+projectID.String()+"|Open &lt;b&gt;Ac&amp;me&lt;/b&gt; in the dashboard>")
}

func chatText(t *testing.T, m message.Message) string {
	t.Helper()
	raw, err := m.Chat()
	require.NoError(t, err)
	var body map[string]string
	require.NoError(t, json.Unmarshal(raw, &body))
	require.Len(t, body, 1, "a chat body is {\"text\": ...} only")
	return body["text"]
}

func TestWebhookQuota(t *testing.T) {
	t.Parallel()
	raw, err := quota().Webhook()
	require.NoError(t, err)
	require.JSONEq(t, `{
		"version": 1,
		"id": "0b0e5f4a-4d3c-4f7e-9b1a-5c2d3e4f5a6b",
		"type": "quota.threshold",
		"createdAt": "2026-11-21T12:00:00Z",
		"project": {"id": "11111111-2222-4333-8444-555555555555", "name": "acme"},
		"total": 1,
		"dashboardUrl": "https://dash.sundial.test/p/11111111-2222-4333-8444-555555555555",
		"alerts": [{
			"id": "quota:p:2026-11-01:75",
			"occurredAt": "2026-11-21T11:58:00.5Z",
			"thresholdPercent": 75, "usage": 750, "quota": 1000,
			"periodStart": "2026-11-01T00:00:00Z"
		}]
	}`, string(raw))
}

func TestWebhookHookFailed(t *testing.T) {
	t.Parallel()
	raw, err := hostile().Webhook()
	require.NoError(t, err)
	require.JSONEq(t, `{
		"version": 1,
		"id": "0b0e5f4a-4d3c-4f7e-9b1a-5c2d3e4f5a6b",
		"type": "hook.failed",
		"createdAt": "2026-11-21T12:00:00Z",
		"project": {"id": "11111111-2222-4333-8444-555555555555", "name": "<b>Ac&me</b>"},
		"total": 1,
		"dashboardUrl": "https://dash.sundial.test/p/11111111-2222-4333-8444-555555555555",
		"alerts": [{
			"id": "hook.failed:hook-0:1",
			"occurredAt": "2026-11-21T11:58:00.5Z",
			"hookId": "hook-0", "domain": "api.acme.com", "path": "/x?a=1&b=<2>",
			"error": "HTTP 500: <script>alert(\"x\")</script> | <!channel>",
			"attempts": 3,
			"dashboardUrl": "https://dash.sundial.test/p/11111111-2222-4333-8444-555555555555/hooks/hook-0"
		}]
	}`, string(raw))
}

func TestWebhookListsAtMostMaxListed(t *testing.T) {
	t.Parallel()
	m := failed(50)
	// A caller handing over more than MaxListed still gets MaxListed.
	for i := message.MaxListed; i < 15; i++ {
		m.Alerts = append(m.Alerts, hookAlert(i, "api.acme.com", "/webhooks/x", "HTTP 500"))
	}
	raw, err := m.Webhook()
	require.NoError(t, err)
	var doc struct {
		Total  int              `json:"total"`
		Alerts []map[string]any `json:"alerts"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, 50, doc.Total)
	require.Len(t, doc.Alerts, message.MaxListed)
	require.Equal(t, "hook-9", doc.Alerts[9]["hookId"])
	require.Contains(t, m.Text(), "and 40 more")
}

func TestWebhookChannelTest(t *testing.T) {
	t.Parallel()
	m := test()
	m.DashboardURL = ""
	raw, err := m.Webhook()
	require.NoError(t, err)
	require.JSONEq(t, `{
		"version": 1,
		"id": "0b0e5f4a-4d3c-4f7e-9b1a-5c2d3e4f5a6b",
		"type": "channel.test",
		"createdAt": "2026-11-21T12:00:00Z",
		"project": {"id": "11111111-2222-4333-8444-555555555555", "name": "acme"},
		"total": 1,
		"alerts": [{"id": "channel.test:0b0e5f4a-4d3c-4f7e-9b1a-5c2d3e4f5a6b", "occurredAt": "2026-11-21T11:58:00.5Z"}]
	}`, string(raw))
	require.NotContains(t, m.Text(), "http")
}

func paused() message.Message {
	return base(message.KindEndpointPaused, &eventv1.Alert{
		AlertId:     "endpoint.paused:p:t:abc",
		Kind:        eventv1.AlertKind_ALERT_KIND_ENDPOINT_PAUSED,
		ProjectId:   projectID.String(),
		OccurredAt:  timestamppb.New(occurred),
		Domain:      "api.acme.com",
		Error:       "10 failures in a row since 2026-11-21T11:57:00Z; last: HTTP 503",
		Attempts:    10,
		PausedUntil: timestamppb.New(time.Date(2026, 11, 21, 11, 58, 30, 0, time.UTC)),
	})
}

func TestEndpointPausedAndResumed(t *testing.T) {
	t.Parallel()
	m := paused()
	require.Equal(t, "[Sundial] acme: api.acme.com paused", m.Subject())
	text := m.Text()
	require.Contains(t, text, "until 2026-11-21T11:58:30Z")
	require.Contains(t, text, "HTTP 503")
	raw, err := m.Webhook()
	require.NoError(t, err)
	require.Contains(t, string(raw), `"type":"endpoint.paused"`)
	require.Contains(t, string(raw), `"pausedUntil":"2026-11-21T11:58:30Z"`)
	require.Contains(t, string(raw), `"attempts":10`)

	resumed := recovered()
	resumed.Alerts[0].Path = ""
	require.Equal(t, "[Sundial] acme: api.acme.com recovered", resumed.Subject())
	require.Contains(t, resumed.Text(), "its pause ended")
}

func TestFailureClassInHookFailedAndPolicyPauses(t *testing.T) {
	t.Parallel()
	m := failed(1)
	m.Alerts[0].Error = "HTTP 410"
	m.Alerts[0].FailureClass = eventv1.FailureClass_FAILURE_CLASS_GONE
	require.Contains(t, m.Text(), "  Error: HTTP 410 (failure class 410)\n")
	raw, err := m.Webhook()
	require.NoError(t, err)
	require.Contains(t, string(raw), `"failureClass":"410"`)

	p := paused()
	p.Alerts[0].FailureClass = eventv1.FailureClass_FAILURE_CLASS_GONE
	text := p.Text()
	require.Contains(t, text, "the project's failure policy pauses it on 410 failures")
	require.Contains(t, text, "until it is resumed with POST /v1/endpoints/resume")
	require.NotContains(t, text, "probes it", "a policy's pause has no probe")
	raw, err = p.Webhook()
	require.NoError(t, err)
	require.Contains(t, string(raw), `"failureClass":"410"`)
}
