package app_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event"
	"github.com/sundial-run/sundial/pkg/secretbox"
	"github.com/sundial-run/sundial/services/gateway/app"
)

// A struct tag cannot name a constant: these tags spell out the variables
// the packages that own them name.
func TestConfigTagsNameTheSharedVariables(t *testing.T) {
	t.Parallel()
	for field, name := range map[string]string{"StreamReplicas": event.ReplicasEnv, "SecretKeys": secretbox.EnvVar} {
		f, ok := reflect.TypeFor[app.Config]().FieldByName(field)
		require.True(t, ok, field)
		require.Equal(t, name, f.Tag.Get("env"), field)
	}
}
