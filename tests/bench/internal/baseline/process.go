package baseline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sundial-run/sundial/tests/bench/internal/suite"
)

// readyLine is the JSON log line riverbase prints once it works jobs.
type readyLine struct {
	Msg      string            `json:"msg"`
	Settings map[string]string `json:"settings"`
}

// waitReady polls the log, from byte from on, for the ready line, until
// timeout, the process's exit or ctx's end, and returns the settings it
// lists.
func waitReady(ctx context.Context, p *suite.Process, from int64, timeout time.Duration) (map[string]string, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if exited, err := p.Exited(); exited {
			return nil, fmt.Errorf("riverbase exited: %v (see %s)", err, p.LogPath)
		}
		if s, ok := readySettings(p.LogPath, from); ok {
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, errors.Join(ctx.Err(), fmt.Errorf("riverbase not ready within %s (see %s)", timeout, p.LogPath))
}

func readySettings(logPath string, from int64) (map[string]string, bool) {
	raw, err := os.ReadFile(logPath)
	if err != nil || int64(len(raw)) < from {
		return nil, false
	}
	raw = raw[from:]
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line readyLine
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == readyMsg {
			return line.Settings, true
		}
	}
	return nil, false
}
