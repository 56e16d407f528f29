package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"
)

// maxPage bounds the body of a dashboard page the benchmark reads.
const maxPage = 8 << 20

// Session is a person signed in to the dashboard: a cookie jar on one
// keep-alive connection, so that timed pages pay no connection set-up.
type Session struct {
	BaseURL string
	HTTP    *http.Client
}

// SignIn uses a set-password link (the path `gateway admin create-user`
// prints) with password, which signs the person in, and returns their
// session.
func SignIn(ctx context.Context, baseURL, setPasswordPath, password string) (*Session, error) {
	link, err := url.Parse(setPasswordPath)
	if err != nil {
		return nil, fmt.Errorf("set-password link: %w", err)
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute}
	s := &Session{BaseURL: baseURL, HTTP: &http.Client{
		Transport: tr, Jar: jar, Timeout: 30 * time.Second,
		// The answers' redirects are not followed: a 303 is the sign-in's
		// success.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	form := url.Values{"token": {link.Query().Get("token")}, "password": {password}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+link.Path, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("POST %s: %s: %s", link.Path, resp.Status, raw)
	}
	return s, nil
}

// Get fetches a page of the dashboard and returns its status and body.
func (s *Session) Get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxPage))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, raw, nil
}

// Sequential gets path n times one after another and times the answers
// 200, as Client.Sequential does.
func (s *Session) Sequential(ctx context.Context, n int, path string, check func([]byte) error) (Timed, error) {
	return sequential(ctx, n, "GET "+path, func() (int, []byte, error) { return s.Get(ctx, path) }, check)
}
