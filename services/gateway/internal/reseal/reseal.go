// Package reseal keeps the secrets at rest sealed with the keyring's
// current key (docs/security.md, "Secrets at rest"): it re-seals the values
// sealed with another key of the keyring (after a rotation), so that the
// old key can then be removed. The gateway runs it at start-up, and
// `gateway admin reseal-secrets` runs it on demand.
//
// It walks each table in batches by id, so its work and its memory are
// bounded by the tables' size and BatchSize, and each write is conditional
// on the values it replaces: a row changed meanwhile (a rotation, a new
// Authorization value) is left as the change made it, already sealed with
// the current key.
package reseal

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/store"
)

// BatchSize is how many rows one query reads.
const BatchSize = 200

// maxErrors bounds the failures a pass reports (and keeps in memory).
const maxErrors = 20

// Counts is what a pass did.
type Counts struct {
	// Sealed is how many secrets it wrote sealed with the current key.
	Sealed int
	// Changed is how many rows changed between its read and its write,
	// and were left as the change made them.
	Changed int
	// Failed is how many secrets it could not open (see the error).
	Failed int
}

// Run makes one pass over every sealed column. A secret it cannot open
// (sealed with a key no longer in the keyring, or altered) is counted,
// reported in the returned error by row and key id, never by value, and
// left as it is; the pass goes on with the others.
func Run(ctx context.Context, db store.DBTX, keys *secretbox.Keyring) (Counts, error) {
	p := pass{q: store.New(db), keys: keys, prefix: keys.CurrentPrefix()}
	for _, table := range []func(context.Context) error{p.signingKeys, p.projects, p.channels} {
		if err := table(ctx); err != nil {
			return p.counts, err
		}
	}
	return p.counts, errors.Join(p.errs...)
}

type pass struct {
	q      *store.Queries
	keys   *secretbox.Keyring
	prefix string
	counts Counts
	errs   []error
}

// fail records a secret that did not open.
func (p *pass) fail(err error) {
	p.counts.Failed++
	if len(p.errs) < maxErrors {
		p.errs = append(p.errs, err)
	}
}

// wrote counts a conditional write's outcome.
func (p *pass) wrote(n int64, err error) error {
	if err != nil {
		return err
	}
	if n == 1 {
		p.counts.Sealed++
	} else {
		p.counts.Changed++
	}
	return nil
}

// reseal opens a sealed value and seals it with the current key. ok is
// false when it did not open (recorded).
func (p *pass) reseal(label, sealed string) (out string, ok bool) {
	plain, err := p.keys.Open(label, sealed)
	if err != nil {
		p.fail(err)
		return "", false
	}
	s, err := p.keys.Seal(label, plain)
	if err != nil {
		p.fail(err)
		return "", false
	}
	return s, true
}

// resealOptional is reseal for a value that may be absent (nil).
func (p *pass) resealOptional(label string, sealed *string) (out *string, ok bool) {
	if sealed == nil {
		return nil, true
	}
	s, ok := p.reseal(label, *sealed)
	if !ok {
		return nil, false
	}
	return &s, true
}

// eachPage walks a table by id, BatchSize rows at a time: read gives the
// rows after an id, id names a row, and each handles one row.
func eachPage[R any](what string, read func(after uuid.UUID) ([]R, error), id func(R) uuid.UUID, each func(R) error) error {
	for after := uuid.Nil; ; {
		rows, err := read(after)
		if err != nil {
			return fmt.Errorf("%s to seal: %w", what, err)
		}
		for _, r := range rows {
			if err := each(r); err != nil {
				return fmt.Errorf("seal %s %s: %w", what, id(r), err)
			}
		}
		if len(rows) < BatchSize {
			return nil
		}
		after = id(rows[len(rows)-1])
	}
}

func (p *pass) signingKeys(ctx context.Context) error {
	read := func(after uuid.UUID) ([]store.SigningKeysToSealRow, error) {
		return p.q.SigningKeysToSeal(ctx, store.SigningKeysToSealParams{After: after, CurrentPrefix: p.prefix, MaxRows: BatchSize})
	}
	return eachPage("signing key", read, func(r store.SigningKeysToSealRow) uuid.UUID { return r.ID },
		func(r store.SigningKeysToSealRow) error {
			sealed, ok := p.reseal(secretbox.Label(secretbox.SigningKeySecret, r.ID), r.SecretSealed)
			if !ok {
				return nil
			}
			return p.wrote(p.q.SealSigningKey(ctx, store.SealSigningKeyParams{
				ID: r.ID, SecretSealed: sealed, OldSecretSealed: r.SecretSealed,
			}))
		})
}

func (p *pass) projects(ctx context.Context) error {
	read := func(after uuid.UUID) ([]store.ProjectsToSealRow, error) {
		return p.q.ProjectsToSeal(ctx, store.ProjectsToSealParams{After: after, CurrentPrefix: p.prefix, MaxRows: BatchSize})
	}
	return eachPage("project", read, func(r store.ProjectsToSealRow) uuid.UUID { return r.ID },
		func(r store.ProjectsToSealRow) error {
			auth, ok := p.resealOptional(secretbox.Label(secretbox.ProjectAuthorization, r.ID), r.AuthorizationHeaderSealed)
			if !ok {
				return nil
			}
			async, ok := p.reseal(secretbox.Label(secretbox.ProjectAsyncSecret, r.ID), r.AsyncSecretSealed)
			if !ok {
				return nil
			}
			return p.wrote(p.q.SealProject(ctx, store.SealProjectParams{
				ID: r.ID, AuthorizationHeaderSealed: auth, AsyncSecretSealed: async,
				OldAuthorizationHeaderSealed: r.AuthorizationHeaderSealed, OldAsyncSecretSealed: r.AsyncSecretSealed,
			}))
		})
}

func (p *pass) channels(ctx context.Context) error {
	read := func(after uuid.UUID) ([]store.ChannelsToSealRow, error) {
		return p.q.ChannelsToSeal(ctx, store.ChannelsToSealParams{After: after, CurrentPrefix: p.prefix, MaxRows: BatchSize})
	}
	return eachPage("channel", read, func(r store.ChannelsToSealRow) uuid.UUID { return r.ID },
		func(r store.ChannelsToSealRow) error {
			sealed, ok := p.reseal(secretbox.Label(secretbox.ChannelConfig, r.ID), r.ConfigSealed)
			if !ok {
				return nil
			}
			return p.wrote(p.q.SealChannel(ctx, store.SealChannelParams{
				ID: r.ID, ConfigSealed: sealed, OldConfigSealed: r.ConfigSealed,
			}))
		})
}
