// Package message renders an alert group for people and programs: the
// subject, plain text and HTML of an e-mail, the text of a chat message and
// the versioned JSON document of a custom webhook.
package message

import (
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
)

// Kinds of message, as stored in alert_groups.kind.
const (
	KindHookFailed        = "hook.failed"
	KindEndpointRecovered = "endpoint.recovered"
	KindEndpointPaused    = "endpoint.paused"
	KindQuotaThreshold    = "quota.threshold"
	KindChannelTest       = "channel.test"
)

// MaxListed is how many alerts of a group a message lists in full; the
// rest are counted.
const MaxListed = 10

// Project is what a message says about the project.
type Project struct {
	ID     uuid.UUID
	Name   string
	Domain string
}

// Message is one alert group, ready to render.
type Message struct {
	// GroupID identifies the group: the webhook's Sundial-Id and the id a
	// receiver deduplicates by.
	GroupID uuid.UUID
	Kind    string
	Project Project
	// Alerts are the group's first alerts, oldest first, at most MaxListed.
	Alerts []*eventv1.Alert
	// Total counts every alert of the group (at least len(Alerts)).
	Total int
	// DashboardURL is the dashboard's base URL; links are DashboardURL +
	// "/p/<project>/hooks/<id>" and DashboardURL + "/p/<project>"
	// (docs/dashboard.md, "Routes").
	DashboardURL string
	// CreatedAt is when the group went out.
	CreatedAt time.Time
}
