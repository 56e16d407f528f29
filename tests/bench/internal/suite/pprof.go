package suite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Profile fetches a CPU profile of each named service over the next d (the
// services must have been built profiled) into dir/<prefix>-<service>.pprof,
// plus mutex and heap profiles taken at its end. It returns the files
// written.
func (s *Suite) Profile(ctx context.Context, dir, prefix string, d time.Duration, names ...string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var (
		mu    sync.Mutex
		files []string
		errs  []error
		wg    sync.WaitGroup
	)
	for _, name := range names {
		addr, ok := s.PprofAddr[name]
		if !ok {
			continue
		}
		wg.Go(func() {
			for _, kind := range []string{"profile", "mutex", "heap"} {
				url := fmt.Sprintf("http://%s/debug/pprof/%s", addr, kind)
				if kind == "profile" {
					url += fmt.Sprintf("?seconds=%d", int(d.Seconds()))
				}
				path := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.pprof", prefix, name, kind))
				err := fetch(ctx, url, path)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s %s profile: %w", name, kind, err))
				} else {
					files = append(files, path)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return files, errs[0]
	}
	return files, nil
}

func fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
