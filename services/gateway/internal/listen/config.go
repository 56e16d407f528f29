// Package listen is the gateway's side of the listener (`sundial listen`,
// docs/listener.md): single-use tickets, the WebSocket protocol, and the
// hub that hands each project's deliveries (NATS requests from the
// dispatcher) to one of its sockets on this gateway and keeps this
// gateway's presence rows, which route the project's hooks to it.
package listen

import (
	"errors"
	"time"
)

// Intervals are the protocol's timings. The defaults are the documented
// ones; tests shorten them.
type Intervals struct {
	// Ping is how often the server pings each socket (30 s).
	Ping time.Duration
	// Silence closes a socket nothing was heard from for this long (90 s).
	Silence time.Duration
	// Recheck is how often the sockets' API keys are checked (30 s):
	// revoked or deleted with their project, the socket closes with 4003.
	Recheck time.Duration
	// Heartbeat is how often the presence rows are refreshed (10 s).
	Heartbeat time.Duration
	// AckTimeout is how long a delivery waits for the listener's answer
	// (10 s), below the dispatcher's 12 s request timeout.
	AckTimeout time.Duration
	// Probe: while deliveries wait for their answers, a socket quiet for
	// longer is pinged (every 1 s), so that an unanswered hook tells a
	// slow listener (it answered the pings: ack_timeout) from a dead
	// connection (GONE).
	Probe time.Duration
}

// DefaultIntervals are the documented timings.
var DefaultIntervals = Intervals{
	Ping:       30 * time.Second,
	Silence:    90 * time.Second,
	Recheck:    30 * time.Second,
	Heartbeat:  10 * time.Second,
	AckTimeout: 10 * time.Second,
	Probe:      time.Second,
}

// withDefaults fills the zero fields with the defaults.
func (iv Intervals) withDefaults() Intervals {
	fill := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	fill(&iv.Ping, DefaultIntervals.Ping)
	fill(&iv.Silence, DefaultIntervals.Silence)
	fill(&iv.Recheck, DefaultIntervals.Recheck)
	fill(&iv.Heartbeat, DefaultIntervals.Heartbeat)
	fill(&iv.AckTimeout, DefaultIntervals.AckTimeout)
	fill(&iv.Probe, DefaultIntervals.Probe)
	return iv
}

// Protocol constants (docs/listener.md).
const (
	// TicketTTL is how long a ticket may be redeemed.
	TicketTTL = 60 * time.Second
	// MaxMessageBytes is the largest client message; a larger one closes
	// the socket with 1009.
	MaxMessageBytes = 64 << 10
	// Subject is the prefix of the subjects deliveries are requested on,
	// one per project: Subject + <project id>.
	Subject = "sundial.listen.deliver."
	// QueueGroup is the queue group of the gateways holding a project's
	// sockets: each delivery reaches one of them.
	QueueGroup = "sundial-listen"
	// Channel is what the gateway NOTIFYs with a project's id when the
	// project's first socket opens on it.
	Channel = "sundial_listener"
)

// Config is what the hub needs from the gateway's configuration.
type Config struct {
	// ResumeWindow is how long a project's hooks are held after its last
	// socket closed (SUNDIAL_LISTENER_RESUME_WINDOW).
	ResumeWindow time.Duration
	// HeaderPrefix names the signed headers whose values forwardRequest
	// repeats in its compatibility fields.
	HeaderPrefix string
	// PublicURL is the gateway as clients reach it (no /v1); empty: the
	// address the ticket request was sent to.
	PublicURL string
	// Intervals are the protocol's timings; zero fields take the defaults.
	Intervals Intervals
	// MaxSockets bounds this gateway's sockets, of every project
	// (SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS), and MaxProjectSockets one
	// project's (SUNDIAL_GATEWAY_LISTENER_MAX_SOCKETS_PER_PROJECT). A socket
	// over either is closed with 1013 at once.
	MaxSockets, MaxProjectSockets int
}

// Validate reports what the hub cannot run with.
func (c Config) Validate() error {
	if c.ResumeWindow <= 0 {
		return errors.New("listener: resume window must be positive")
	}
	if c.MaxProjectSockets < 1 || c.MaxProjectSockets > c.MaxSockets {
		return errors.New("listener: want 1 <= sockets per project <= sockets")
	}
	return nil
}
