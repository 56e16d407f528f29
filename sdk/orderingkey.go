package sundial

import (
	"context"
	"iter"
	"net/url"
	"strconv"
)

// What an ordering key does when one of its hooks fails for good
// (Project.OrderingOnFailure).
const (
	// OrderingContinue moves on to the key's next hook (the default).
	OrderingContinue = "continue"
	// OrderingHold keeps the key waiting, held, until
	// OrderingKeyService.Resume, or until the failed hook is deleted or
	// retried.
	OrderingHold = "hold"
)

// OrderingKey is the state of an ordering key: the hooks scheduled with it
// (ScheduleHookRequest.OrderingKey) are delivered one at a time, in order
// of PostAt, CreatedAt breaking ties.
type OrderingKey struct {
	Key string `json:"key"`
	// HeadHookID is the hook the key is on: being delivered, waiting for
	// a retry or an async answer, or, when Held, the failed hook it waits
	// behind; nil when the key is free for its next hook.
	HeadHookID *string `json:"headHookId"`
	// Held says the key's hook failed for good under OrderingHold: its
	// other hooks wait for Resume.
	Held bool `json:"held"`
	// Unfinished counts the key's pending and retry hooks.
	Unfinished int64 `json:"unfinished"`
}

// ListOrderingKeysParams pages a listing of held keys; zero fields are
// left out.
type ListOrderingKeysParams struct {
	// Limit is the page size, 1 to 1000 (default 100).
	Limit int
	// Cursor is the previous page's NextCursor (AllHeld follows it for
	// you).
	Cursor string
}

func (p ListOrderingKeysParams) values() url.Values {
	v := url.Values{"held": {"true"}}
	if p.Limit != 0 {
		v.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		v.Set("cursor", p.Cursor)
	}
	return v
}

// OrderingKeyPage is one page of held keys, in key order.
type OrderingKeyPage struct {
	Data []OrderingKey `json:"data"`
	Meta ListMeta      `json:"meta"`
}

// OrderingKeyService is the ordering keys part of the API.
type OrderingKeyService struct{ c *Client }

// orderingKeyPath is the key's resource, the key escaped as one path
// segment (a "/" in it as %2F).
func orderingKeyPath(key, rest string) (string, error) {
	p, err := pathOf("/ordering-keys", "key", key)
	if err != nil {
		return "", err
	}
	return p + rest, nil
}

// Get returns a key's state (GET /v1/ordering-keys/{key}); a key the
// project has no trace of is an *APIError with status 404.
func (s *OrderingKeyService) Get(ctx context.Context, key string) (OrderingKey, error) {
	p, err := orderingKeyPath(key, "")
	if err != nil {
		return OrderingKey{}, err
	}
	return get[OrderingKey](ctx, s.c, call{method: "GET", path: p})
}

// ListHeld returns one page of the project's held keys, in key order
// (GET /v1/ordering-keys?held=true).
func (s *OrderingKeyService) ListHeld(ctx context.Context, p ListOrderingKeysParams) (OrderingKeyPage, error) {
	var page OrderingKeyPage
	err := s.c.do(ctx, call{method: "GET", path: "/ordering-keys", query: p.values()}, &page)
	return page, err
}

// AllHeld walks every page of the project's held keys from p.Cursor on and
// yields each. An error is yielded once, with a zero OrderingKey, and ends
// the walk.
func (s *OrderingKeyService) AllHeld(ctx context.Context, p ListOrderingKeysParams) iter.Seq2[OrderingKey, error] {
	return walk(func(cursor string) ([]OrderingKey, string, error) {
		p.Cursor = cursor
		page, err := s.ListHeld(ctx, p)
		return page.Data, page.Meta.NextCursor, err
	}, p.Cursor)
}

// Resume frees a held key for its next hook, which is due at once, and
// returns the key's new state (POST /v1/ordering-keys/{key}/resume); the
// hook it was held behind stays failed. A key that is not held is an
// *APIError with status 409, and nothing changes. It is not retried after
// a failure that may have reached the server: a repeat of a resume that
// went through would be that 409.
func (s *OrderingKeyService) Resume(ctx context.Context, key string) (OrderingKey, error) {
	p, err := orderingKeyPath(key, "/resume")
	if err != nil {
		return OrderingKey{}, err
	}
	return get[OrderingKey](ctx, s.c, call{method: "POST", path: p})
}
