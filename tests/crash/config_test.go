package crash

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/internal/proc"
)

// TestServicesReportConfigurationErrorsAlike: a wrong setting stops every
// service the same way: exit status 2 and one line "<service>:
// configuration: ..." naming the variable, before anything is started.
func TestServicesReportConfigurationErrorsAlike(t *testing.T) {
	useBinaries(t)
	t.Parallel()
	env := map[string]string{"SUNDIAL_LOG_LEVEL": "loud"}
	services := map[string][]string{"gateway": {"serve"}, "scheduler": nil, "dispatcher": nil, "notifier": nil}
	for name, args := range services {
		p := proc.Start(t, name, binaries.Path(t, name), []map[string]string{env}, args...)
		select {
		case <-p.Done():
		case <-time.After(time.Minute):
			t.Fatalf("%s kept running with a wrong setting", name)
		}
		require.Equal(t, 2, p.ExitCode(), name)
		out := p.Output.String()
		require.True(t, strings.HasPrefix(out, name+": configuration: "), "%s: %s", name, out)
		require.Contains(t, out, "SUNDIAL_LOG_LEVEL", name)
	}
}
