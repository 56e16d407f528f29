package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// batchPath is the batch create's endpoint.
const batchPath = "/v1/hooks/batch"

// BatchBody is the body of a POST /v1/hooks/batch of size hooks at path,
// each due at postAt, with a payload of its own ({"n":i}).
func BatchBody(size int, postAt time.Time, path string) ([]byte, error) {
	req := struct {
		Hooks []createRequest `json:"hooks"`
	}{Hooks: make([]createRequest, size)}
	at := postAt.UTC().Format(time.RFC3339Nano)
	for i := range req.Hooks {
		req.Hooks[i] = createRequest{Path: path, PostAt: at, Data: map[string]int{"n": i}}
	}
	return json.Marshal(req)
}

// CheckBatch posts one batch and checks its answer: 201 with want hooks,
// each with an id of its own. It is the batch loop's warm-up, and the one
// answer the benchmark reads (the loop only reads the status, so that
// decoding answers does not take the gateway's processor).
func (c *Client) CheckBatch(ctx context.Context, body []byte, want int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+batchPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", c.APIKey)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s: %s: %.500s", batchPath, resp.Status, raw)
	}
	var out struct {
		Data []struct {
			ID uuid.UUID `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("POST %s answer: %w", batchPath, err)
	}
	ids := make(map[uuid.UUID]bool, len(out.Data))
	for _, h := range out.Data {
		ids[h.ID] = true
	}
	if len(out.Data) != want || len(ids) != want {
		return fmt.Errorf("POST %s answered %d hooks (%d ids), want %d", batchPath, len(out.Data), len(ids), want)
	}
	return nil
}

// BatchLoop is Loop with POST /v1/hooks/batch: each client posts body (of
// size hooks) again as soon as its previous batch is answered. Count and
// PerSecond are hooks (size per answer 201), Latency is per request.
func (c *Client) BatchLoop(ctx context.Context, clients int, d time.Duration, body []byte, size int) (Created, error) {
	l, err := closedLoop(ctx, clients, d, func() int { return c.postStatus(ctx, batchPath, body) })
	if err != nil {
		return Created{}, err
	}
	return l.created(size), nil
}
