package app

import (
	"context"
	"fmt"
	"time"

	"github.com/sundial-run/sundial/pkg/postgres"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/internal/reseal"
)

// resealTimeout bounds the start-up pass; a pass cut short is finished by
// the next start or by `gateway admin reseal-secrets`.
const resealTimeout = 10 * time.Minute

// resealSecrets re-seals what was sealed with another key of the keyring
// (package reseal), once, in the background: the readers open every key
// of the keyring meanwhile, so serving need not wait for it.
func (a *App) resealSecrets(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, resealTimeout)
	defer cancel()
	start := time.Now()
	counts, err := reseal.Run(ctx, a.pool, a.keys)
	attrs := []any{"sealed", counts.Sealed, "changed_meanwhile", counts.Changed, "failed", counts.Failed,
		"key", a.keys.Primary(), "duration", time.Since(start).String()}
	switch {
	case err != nil:
		// Names rows and key ids, never a value (package secretbox).
		a.log.Error("secrets resealed", append(attrs, "error", err)...)
	case counts.Sealed > 0 || counts.Changed > 0:
		a.log.Info("secrets resealed", attrs...)
	}
}

// ResealCounts is what ResealSecrets did.
type ResealCounts = reseal.Counts

// ResealSecrets runs one reseal pass over db: every secret sealed with
// another key than the keyring's first ends sealed with the first. An
// error names the rows (and key ids) it could not open.
func ResealSecrets(ctx context.Context, db Database) (ResealCounts, error) {
	keys, err := secretbox.Parse(db.SecretKeys)
	if err != nil {
		return ResealCounts{}, fmt.Errorf("config: %w", err)
	}
	pool, err := postgres.Connect(ctx, db.URL, 2)
	if err != nil {
		return ResealCounts{}, err
	}
	defer pool.Close()
	return reseal.Run(ctx, pool, keys)
}
