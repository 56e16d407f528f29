package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// NATSStats are cumulative message counters of the NATS server: every
// publish, JetStream acknowledgement, fetch request and delivered message.
type NATSStats struct {
	InMsgs  int64 `json:"inMsgs"`
	OutMsgs int64 `json:"outMsgs"`
	InBytes int64 `json:"inBytes"`
}

// Sub is s minus an earlier reading.
func (s NATSStats) Sub(o NATSStats) NATSStats {
	return NATSStats{s.InMsgs - o.InMsgs, s.OutMsgs - o.OutMsgs, s.InBytes - o.InBytes}
}

// NATSStats reads the server's /varz.
func (s *Suite) NATSStats(ctx context.Context) (NATSStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.NATSMonitor+"/varz", nil)
	if err != nil {
		return NATSStats{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return NATSStats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return NATSStats{}, fmt.Errorf("nats varz: %s", resp.Status)
	}
	var v struct {
		InMsgs  int64 `json:"in_msgs"`
		OutMsgs int64 `json:"out_msgs"`
		InBytes int64 `json:"in_bytes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return NATSStats{}, fmt.Errorf("nats varz: %w", err)
	}
	return NATSStats(v), nil
}
