package message

import (
	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/failclass"
)

// WebhookVersion is the version of the custom webhook document.
const WebhookVersion = 1

// webhookDoc is the custom webhook's document, AlertNotification in the
// gateway's OpenAPI description. Its shape is a contract: add fields, never
// change or remove one without a new version.
type webhookDoc struct {
	Version      int            `json:"version"`
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	CreatedAt    string         `json:"createdAt"`
	Project      webhookProject `json:"project"`
	Total        int            `json:"total"`
	DashboardURL string         `json:"dashboardUrl,omitempty"`
	Alerts       []webhookAlert `json:"alerts"`
}

type webhookProject struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// webhookAlert holds the fields of every kind; those that do not apply to
// an alert are left out.
type webhookAlert struct {
	ID         string `json:"id"`
	OccurredAt string `json:"occurredAt,omitempty"`
	// Hook alerts.
	HookID       string `json:"hookId,omitempty"`
	Domain       string `json:"domain,omitempty"`
	Path         string `json:"path,omitempty"`
	Error        string `json:"error,omitempty"`
	Attempts     int32  `json:"attempts,omitempty"`
	DashboardURL string `json:"dashboardUrl,omitempty"`
	// Quota alerts.
	ThresholdPercent int32  `json:"thresholdPercent,omitempty"`
	Usage            int64  `json:"usage,omitempty"`
	Quota            int64  `json:"quota,omitempty"`
	PeriodStart      string `json:"periodStart,omitempty"`
	// endpoint.paused: until when (the first probe).
	PausedUntil string `json:"pausedUntil,omitempty"`
	// hook.failed: the last failure's class; endpoint.paused: the class
	// whose failure policy paused it.
	FailureClass string `json:"failureClass,omitempty"`
}

// Webhook is the versioned JSON document a custom webhook receives.
func (m Message) Webhook() ([]byte, error) {
	alerts := m.listed()
	doc := webhookDoc{
		Version:      WebhookVersion,
		ID:           m.GroupID.String(),
		Type:         m.Kind,
		CreatedAt:    timestamp(m.CreatedAt),
		Project:      webhookProject{ID: m.Project.ID.String(), Name: m.Project.Name},
		Total:        m.total(),
		DashboardURL: m.projectLink(),
		Alerts:       make([]webhookAlert, 0, len(alerts)),
	}
	for _, a := range alerts {
		doc.Alerts = append(doc.Alerts, m.webhookAlert(a))
	}
	return marshal(doc)
}

func (m Message) webhookAlert(a *eventv1.Alert) webhookAlert {
	w := webhookAlert{ID: a.GetAlertId()}
	if t := a.GetOccurredAt(); t != nil {
		w.OccurredAt = timestamp(t.AsTime())
	}
	switch m.alertKind(a) {
	case KindHookFailed, KindEndpointRecovered:
		w.HookID = a.GetHookId()
		w.Domain = a.GetDomain()
		w.Path = a.GetPath()
		w.Error = a.GetError()
		w.Attempts = a.GetAttempts()
		w.FailureClass = failclass.Word(a.GetFailureClass())
		if w.HookID != "" {
			w.DashboardURL = m.hookLink(w.HookID)
		}
	case KindEndpointPaused:
		w.Domain = a.GetDomain()
		w.Error = a.GetError()
		w.Attempts = a.GetAttempts()
		if t := a.GetPausedUntil(); t != nil {
			w.PausedUntil = timestamp(t.AsTime())
		}
		w.FailureClass = failclass.Word(a.GetFailureClass())
	case KindQuotaThreshold:
		w.ThresholdPercent = a.GetThresholdPercent()
		w.Usage = a.GetUsage()
		w.Quota = a.GetQuota()
		if t := a.GetPeriodStart(); t != nil {
			w.PeriodStart = timestamp(t.AsTime())
		}
	}
	return w
}

// alertKind is the alert's own kind, or the message's when it has none.
func (m Message) alertKind(a *eventv1.Alert) string {
	switch a.GetKind() {
	case eventv1.AlertKind_ALERT_KIND_HOOK_FAILED:
		return KindHookFailed
	case eventv1.AlertKind_ALERT_KIND_ENDPOINT_RECOVERED:
		return KindEndpointRecovered
	case eventv1.AlertKind_ALERT_KIND_ENDPOINT_PAUSED:
		return KindEndpointPaused
	case eventv1.AlertKind_ALERT_KIND_QUOTA_THRESHOLD:
		return KindQuotaThreshold
	case eventv1.AlertKind_ALERT_KIND_CHANNEL_TEST:
		return KindChannelTest
	default:
		return m.Kind
	}
}
