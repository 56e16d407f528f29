package retry

import "encoding/json"

// Columns are a hook's retry settings as the database holds them: its
// project's default policy (the projects table's retry_* columns, as sqlc
// reads them) and the hook's retry_override.
type Columns struct {
	MinRetries    int32
	DelaySecs     int32
	Strategy      string
	BackoffFactor float64
	MaxDelaySecs  int32
	Jitter        bool
	// Override is the hook's retry_override: nil or JSON null for none.
	Override json.RawMessage
}

// Project is the project's default policy.
func (c Columns) Project() Policy {
	return Policy{
		MinRetries:    int(c.MinRetries),
		DelaySecs:     int(c.DelaySecs),
		Strategy:      c.Strategy,
		BackoffFactor: c.BackoffFactor,
		MaxDelaySecs:  int(c.MaxDelaySecs),
		Jitter:        c.Jitter,
	}
}

// Policy is the policy that governs the hook: Effective of the project's
// policy and the override.
func (c Columns) Policy() (Policy, error) {
	return Effective(c.Project(), c.Override)
}
