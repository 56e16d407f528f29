package secretbox_test

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/secretbox"
)

// key returns a fresh keyring entry "id:base64key" and its base64 key.
func key(t *testing.T, id string) (entry, b64 string) {
	t.Helper()
	raw := make([]byte, secretbox.KeyBytes)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	b64 = base64.StdEncoding.EncodeToString(raw)
	return id + ":" + b64, b64
}

func parse(t *testing.T, entries ...string) *secretbox.Keyring {
	t.Helper()
	k, err := secretbox.Parse(strings.Join(entries, ","))
	require.NoError(t, err)
	return k
}

func TestSealedValuesOpenOnlyUnderTheirLabel(t *testing.T) {
	t.Parallel()
	a, _ := key(t, "a")
	k := parse(t, a)
	sealed, err := k.SealString("signing_keys.secret:1", "sdsig_plain")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(sealed, "v1:a:"), sealed)
	require.NotContains(t, sealed, "sdsig_plain")

	again, err := k.SealString("signing_keys.secret:1", "sdsig_plain")
	require.NoError(t, err)
	require.NotEqual(t, sealed, again, "a random nonce per value")

	got, err := k.OpenString("signing_keys.secret:1", sealed)
	require.NoError(t, err)
	require.Equal(t, "sdsig_plain", got)

	_, err = k.OpenString("signing_keys.secret:2", sealed)
	require.ErrorIs(t, err, secretbox.ErrNotOpened, "a value moved to another row does not open")
	_, err = k.OpenString("projects.authorization_header:1", sealed)
	require.ErrorIs(t, err, secretbox.ErrNotOpened, "nor in another column")

	tampered := sealed[:len(sealed)-4] + "AAA="
	_, err = k.OpenString("signing_keys.secret:1", tampered)
	require.Error(t, err)
	_, err = k.OpenString("x", "sdsig_plain")
	require.ErrorIs(t, err, secretbox.ErrMalformed)
}

// A rotation: values sealed under A, B added first (B seals, A still
// opens), every value re-sealed under B, then A removed.
func TestKeyRotationKeepsEveryValueReadable(t *testing.T) {
	t.Parallel()
	a, aKey := key(t, "a")
	b, bKey := key(t, "b")
	onlyA := parse(t, a)
	old, err := onlyA.SealString("l", "secret value")
	require.NoError(t, err)

	both := parse(t, b, a)
	require.Equal(t, "b", both.Primary())
	require.False(t, both.Current(old))
	got, err := both.OpenString("l", old)
	require.NoError(t, err, "the old key still opens what it sealed")
	require.Equal(t, "secret value", got)

	resealed, err := both.SealString("l", got)
	require.NoError(t, err)
	require.True(t, both.Current(resealed))
	id, err := secretbox.KeyID(resealed)
	require.NoError(t, err)
	require.Equal(t, "b", id)

	onlyB := parse(t, b)
	got, err = onlyB.OpenString("l", resealed)
	require.NoError(t, err)
	require.Equal(t, "secret value", got)

	_, err = onlyB.OpenString("l", old)
	require.ErrorIs(t, err, secretbox.ErrUnknownKey)
	require.Contains(t, err.Error(), `key "a"`, "the error names the missing key's id")
	for _, leak := range []string{"secret value", aKey, bKey} {
		require.NotContains(t, err.Error(), leak)
	}
	require.NotContains(t, both.String(), aKey)
	require.NotContains(t, both.String(), bKey)
}

func TestParseRefusesBadKeyringsWithoutPrintingKeys(t *testing.T) {
	t.Parallel()
	short := base64.StdEncoding.EncodeToString([]byte("sixteen byte key"))
	a, _ := key(t, "a")
	for name, s := range map[string]string{
		"empty":      "",
		"no id":      short,
		"short key":  "k1:" + short,
		"not base64": "k1:%%%%",
		"bad id":     "k 1:" + a[2:],
		"duplicate":  a + "," + a,
	} {
		_, err := secretbox.Parse(s)
		require.Error(t, err, name)
		require.NotContains(t, err.Error(), short, name)
		require.NotContains(t, err.Error(), a[2:], name)
		if name != "duplicate" {
			require.Contains(t, err.Error(), "openssl rand -base64 32", name)
		}
	}
}

// What opening costs a reader (the dispatcher opens a project's secrets
// once per key cache TTL; the gateway once per async answer).
func BenchmarkOpen(b *testing.B) {
	k, err := secretbox.Parse("a:" + base64.StdEncoding.EncodeToString(make([]byte, secretbox.KeyBytes)))
	require.NoError(b, err)
	sealed, err := k.SealString("signing_keys.secret:1", "sdsig_0123456789012345678901234567890123456789012")
	require.NoError(b, err)
	for b.Loop() {
		if _, err := k.Open("signing_keys.secret:1", sealed); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCheckStoredNamesTheKeysAtFault: a stored value that opens passes; one
// sealed with a key the keyring lacks, or with another key of the same id
// (keys made again), is ErrWrongKeys naming the setting and the key ids,
// never a key.
func TestCheckStoredNamesTheKeysAtFault(t *testing.T) {
	t.Parallel()
	a, aKey := key(t, "a")
	sealed, err := parse(t, a).SealString("signing_keys.secret:1", "sdsig_plain")
	require.NoError(t, err)
	require.NoError(t, parse(t, a).CheckStored("signing_keys.secret:1", sealed))

	b, bKey := key(t, "b")
	err = parse(t, b).CheckStored("signing_keys.secret:1", sealed)
	require.ErrorIs(t, err, secretbox.ErrWrongKeys)
	require.ErrorContains(t, err, `SUNDIAL_SECRET_KEYS does not open the secrets stored in the database: they are sealed with key "a", which SUNDIAL_SECRET_KEYS lacks (it has b)`)

	again, againKey := key(t, "a")
	err = parse(t, again).CheckStored("signing_keys.secret:1", sealed)
	require.ErrorIs(t, err, secretbox.ErrWrongKeys)
	require.ErrorContains(t, err, `key "a" of SUNDIAL_SECRET_KEYS is not the key "a" that sealed them`)
	for _, k := range []string{aKey, bKey, againKey} {
		require.NotContains(t, err.Error(), k)
	}
}
