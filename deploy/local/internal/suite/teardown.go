package suite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// teardown stops what was started, newest first, each step bounded.
type teardown []step

type step struct {
	name string
	stop func(context.Context) error
}

func (t *teardown) add(name string, stop func(context.Context) error) {
	*t = append(*t, step{name: name, stop: stop})
}

func (t teardown) run(log *slog.Logger, grace time.Duration) error {
	var errs []error
	for i := len(t) - 1; i >= 0; i-- {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		err := t[i].stop(ctx)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", t[i].name, err))
			continue
		}
		log.Info("stopped", "what", t[i].name)
	}
	return errors.Join(errs...)
}
