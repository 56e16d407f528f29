package exhaustion

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/envconf"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	"github.com/sundial-run/sundial/services/gateway/cli"
	"github.com/sundial-run/sundial/testkit/logtest"
	"github.com/sundial-run/sundial/testkit/natstest"
	"github.com/sundial-run/sundial/testkit/pgtest"
	"github.com/sundial-run/sundial/testkit/secrettest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// gatewayProcess is a gateway running as a process, with one project.
type gatewayProcess struct {
	pid     int
	base    string
	apiKey  string
	dbURL   string
	env     map[string]string
	output  *logtest.Buffer
	stopped chan struct{}
}

// startGateway runs `gateway serve` on a fresh database and NATS server,
// with nofile as its open file limit when above 0 (set by the shell that
// execs it, so the gateway reads it at start) and extra added to its
// environment, and waits until it answers.
func startGateway(t *testing.T, nofile int, extra map[string]string) *gatewayProcess {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDB(t)
	ns := natstest.Start(t, natstest.Options{})
	env := map[string]string{
		"SUNDIAL_DATABASE_URL":          dbURL,
		"SUNDIAL_NATS_URL":              ns.ClientURL(),
		"SUNDIAL_GATEWAY_ADMIN_ADDR":    "127.0.0.1:0",
		"SUNDIAL_SCHEDULER_ADMIN_ADDR":  "127.0.0.1:0",
		"SUNDIAL_DISPATCHER_ADMIN_ADDR": "127.0.0.1:0",
		"SUNDIAL_NOTIFIER_ADMIN_ADDR":   "127.0.0.1:0",
		"SUNDIAL_DATABASE_MAX_CONNS":    "8",
		"SUNDIAL_SHUTDOWN_TIMEOUT":      "5s",
		"SUNDIAL_LOG_LEVEL":             "warn",
		"SUNDIAL_SECRET_KEYS":           secrettest.Keys,
	}
	maps.Copy(env, extra)
	creds, err := gateway.CreateProject(ctx, gateway.Database{URL: dbURL, SecretKeys: secrettest.Keys}, "exhaustion", "hooks.example.com")
	require.NoError(t, err)
	// Lift the per-key rate limit: the tests create hooks as fast as they can.
	var out strings.Builder
	code := cli.Run(ctx, []string{"admin", "set-plan", "--project", creds.ProjectID,
		"--rate-limit", "100000", "--rate-burst", "100000"}, cli.Env{Stdout: &out, Stderr: &out, Lookup: envconf.Map(env)})
	require.Equal(t, cli.ExitOK, code, "set-plan: %s", out.String())

	// The API's port is found free here and bound by the process, so
	// another may take it in between: the tests beside this one hold
	// thousands of client sockets, each on a port of the same range. A
	// gateway that could not bind it is started again on another.
	const attempts = 5
	for attempt := 1; ; attempt++ {
		g := launchGateway(t, nofile, env, creds)
		if g.answers(t) {
			return g
		}
		if attempt == attempts || !strings.Contains(g.output.String(), "address already in use") {
			t.Fatalf("the gateway never answered on %s:\n%s", g.base, g.output.String())
		}
	}
}

// launchGateway starts `gateway serve` with env on a port found free.
func launchGateway(t *testing.T, nofile int, env map[string]string, creds gateway.Credentials) *gatewayProcess {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	env = maps.Clone(env)
	env["SUNDIAL_HTTP_ADDR"] = addr

	bin := binary(t)
	cmd := exec.Command(bin, "serve")
	if nofile > 0 {
		cmd = exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" serve`, nofile), bin)
	}
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	g := &gatewayProcess{base: "http://" + addr, apiKey: creds.APIKey, dbURL: env["SUNDIAL_DATABASE_URL"], env: env,
		output: &logtest.Buffer{}, stopped: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = g.output, g.output
	require.NoError(t, cmd.Start())
	g.pid = cmd.Process.Pid
	go func() {
		_ = cmd.Wait()
		close(g.stopped)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-g.stopped
		if t.Failed() {
			t.Logf("gateway pid %d output:\n%s", g.pid, g.output.String())
		}
	})
	return g
}

// answers waits until the gateway answers /healthz, and reports false if
// its process ends first or it does not answer within a minute.
func (g *gatewayProcess) answers(t *testing.T) bool {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if res, err := client.Get(g.base + "/healthz"); err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-g.stopped:
			return false
		case <-tick.C:
		}
	}
	return false
}

// status reads a field of /proc/<pid>/status in kB (VmRSS, VmHWM).
func (g *gatewayProcess) status(t *testing.T, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", g.pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if ok && name == field {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(value), " kB"))
			require.NoError(t, err)
			return kb
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no %s in /proc/%d/status", field, g.pid)
	return 0
}

// resetPeak starts VmHWM over from the current RSS (Linux clear_refs 5),
// so that the peak measured is the attack's, not the set-up's. It reports
// whether the kernel allowed it.
func (g *gatewayProcess) resetPeak() bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", g.pid), []byte("5"), 0) == nil
}

// openFiles counts the gateway's file descriptors.
func (g *gatewayProcess) openFiles(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", g.pid))
	require.NoError(t, err)
	return len(entries)
}

// The gateway binary, built once for the run. Tests register with
// useBinary before t.Parallel, so that the folder outlives every test that
// may exec from it; the last one to finish removes it (pgtest.Main exits
// without a hook for that).
var build struct {
	mu    sync.Mutex
	users int
	dir   string
	err   error
}

func useBinary(t *testing.T) {
	build.mu.Lock()
	build.users++
	build.mu.Unlock()
	t.Cleanup(func() {
		build.mu.Lock()
		defer build.mu.Unlock()
		build.users--
		if build.users == 0 && build.dir != "" {
			_ = os.RemoveAll(build.dir)
			build.dir, build.err = "", nil
		}
	})
}

func binary(t *testing.T) string {
	t.Helper()
	build.mu.Lock()
	defer build.mu.Unlock()
	require.Positive(t, build.users, "call useBinary before t.Parallel")
	if build.dir == "" && build.err == nil {
		build.dir, build.err = buildGateway()
	}
	require.NoError(t, build.err)
	return filepath.Join(build.dir, "gateway")
}

func buildGateway() (string, error) {
	dir, err := os.MkdirTemp("", "sundial-exhaustion-bin-")
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/sundial-run/sundial/services/gateway/cmd/gateway").CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("go build: %w: %s", err, out)
	}
	return dir, nil
}
