package event

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrFixedSetting is wrapped by EnsureStreams' error when a stream exists
// with a setting that JetStream cannot change on a live stream.
var ErrFixedSetting = errors.New("a stream setting JetStream cannot change")

// EnsureStreams creates the streams with the given replicas or brings
// their configuration up to date. Every service calls it at start-up and
// again when a stream has vanished, so that the suite heals after NATS lost
// its store.
//
// Sundial owns the settings of Streams (subjects, retention, storage, age,
// duplicate window, discard policy, description, replicas); anything else
// an operator set on a stream (byte or message limits, placement) is kept.
// A stream whose storage or retention differs is an error that says how to
// fix it: JetStream cannot change those, and running on settings other than
// Sundial's (memory storage losing the queue at a restart, a limits stream
// keeping acknowledged hooks) must not go unnoticed. Replicas are changed
// by an update; EnsureStreams then waits, within ctx, until JetStream has
// placed the stream on that many servers, so that the consumers created
// next can have as many replicas.
//
// A stream that exists with the wanted settings is left alone: updating a
// stream while consumers are being created on it is needless churn for the
// server, and every consumer restart calls this.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if err := CheckReplicas(replicas); err != nil {
		return err
	}
	for _, want := range Streams(replicas) {
		if err := ensureStream(ctx, js, want); err != nil {
			return fmt.Errorf("%s: %w", where(js), err)
		}
	}
	return nil
}

// where names the NATS servers js talks to, without credentials, and the
// setting that lists them: a server that cannot be reached shows first as
// a stream that cannot be made, and the operator must know which server.
func where(js jetstream.JetStream) string {
	var urls []string
	for _, s := range js.Conn().Servers() {
		if u, err := url.Parse(s); err == nil {
			u.User = nil
			urls = append(urls, u.String())
		}
	}
	return "NATS at " + strings.Join(urls, ",") + " (SUNDIAL_NATS_URL)"
}

// RequestTimeout bounds each JetStream API request of EnsureStreams,
// whatever the caller's context allows. A cluster drops a request about a
// stream that has no leader (it is electing one) without an answer, so an
// unbounded request would hold its caller for the caller's whole deadline
// (a scheduler's claim, for a lease) after the stream is back.
const RequestTimeout = 5 * time.Second

func ensureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) error {
	reqCtx, cancel := context.WithTimeout(ctx, RequestTimeout)
	s, err := js.Stream(reqCtx, want.Name)
	cancel()
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// CreateOrUpdate, not Create: another service may create it at the
		// same moment.
		reqCtx, cancel := context.WithTimeout(ctx, RequestTimeout)
		defer cancel()
		if _, err := js.CreateOrUpdateStream(reqCtx, want); err != nil {
			return fmt.Errorf("create stream %s with %d replicas: %w", want.Name, want.Replicas, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream %s: %w", want.Name, err)
	}
	have := s.CachedInfo().Config
	if err := fixedSettings(have, want); err != nil {
		return err
	}
	if upToDate(have, want) {
		return nil
	}
	reqCtx, cancel = context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	if _, err := js.UpdateStream(reqCtx, owned(have, want)); err != nil {
		return fmt.Errorf("update stream %s (replicas %d to %d): %w", want.Name, have.Replicas, want.Replicas, err)
	}
	if have.Replicas == want.Replicas {
		return nil
	}
	return awaitPeers(ctx, s, want.Replicas)
}

// awaitPeers waits, within ctx, until JetStream has given the stream as
// many servers as replicas: it adds them in the background after the
// update, and refuses a consumer with more replicas than the stream has
// servers until then.
func awaitPeers(ctx context.Context, s jetstream.Stream, replicas int) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		reqCtx, cancel := context.WithTimeout(ctx, RequestTimeout)
		info, err := s.Info(reqCtx)
		cancel()
		if err == nil && info.Cluster != nil && len(info.Cluster.Replicas)+1 == replicas {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream %s: not yet on %d servers (JetStream goes on adding them): %w",
				s.CachedInfo().Config.Name, replicas, errors.Join(ctx.Err(), err))
		case <-tick.C:
		}
	}
}

// fixedSettings reports the settings of an existing stream that differ
// from Sundial's and that JetStream cannot update.
func fixedSettings(have, want jetstream.StreamConfig) error {
	var errs []error
	if have.Storage != want.Storage {
		errs = append(errs, fixedError(want.Name, "storage", have.Storage, want.Storage))
	}
	if have.Retention != want.Retention {
		errs = append(errs, fixedError(want.Name, "retention", have.Retention, want.Retention))
	}
	return errors.Join(errs...)
}

func fixedError(stream, setting string, have, want fmt.Stringer) error {
	return fmt.Errorf("%w: stream %s has %s %s, Sundial wants %s; to fix it, stop every Sundial service, "+
		"delete the stream (nats stream rm %s: the hooks it holds are re-driven from PostgreSQL when their leases "+
		"expire) and start the services again, which create it anew (docs/operations.md, \"Streams and consumers\")",
		ErrFixedSetting, stream, setting, have, want, stream)
}

// owned is have with Sundial's settings taken from want.
func owned(have, want jetstream.StreamConfig) jetstream.StreamConfig {
	cfg := have
	cfg.Description = want.Description
	cfg.Subjects = want.Subjects
	cfg.MaxAge = want.MaxAge
	cfg.Duplicates = want.Duplicates
	cfg.Discard = want.Discard
	cfg.Replicas = want.Replicas
	return cfg
}

// upToDate reports whether an existing stream has the settings Sundial sets.
func upToDate(have, want jetstream.StreamConfig) bool {
	return slices.Equal(have.Subjects, want.Subjects) &&
		have.Retention == want.Retention &&
		have.Storage == want.Storage &&
		have.MaxAge == want.MaxAge &&
		have.Duplicates == want.Duplicates &&
		have.Discard == want.Discard &&
		have.Description == want.Description &&
		have.Replicas == want.Replicas
}
