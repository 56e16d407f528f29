package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
)

// cliPackage is the `sundial` command's main package, built from the
// workspace as the services are.
const cliPackage = "github.com/sundial-run/sundial/cmd/sundial"

// BuildCLI compiles the `sundial` command into dir with the workspace at
// root and returns its path.
func BuildCLI(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "sundial")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, cliPackage)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", cliPackage, err, out)
	}
	return bin, nil
}

// CreateProject makes another project whose domain is domain, with the
// raised plan, through the gateway binary as an operator would.
func (s *Suite) CreateProject(ctx context.Context, name, domain string) (Credentials, error) {
	out, err := s.gatewayCommand(ctx, "admin", "create-project", "--name", name, "--domain", domain, "--json")
	if err != nil {
		return Credentials{}, err
	}
	var c Credentials
	if err := json.Unmarshal(out, &c); err != nil {
		return Credentials{}, fmt.Errorf("create-project output: %w", err)
	}
	if _, err := s.gatewayCommand(ctx, append([]string{"admin", "set-plan", "--project", c.ProjectID}, Plan...)...); err != nil {
		return Credentials{}, err
	}
	return c, nil
}

// StartListener runs `sundial listen --forward-to forwardTo --output json`
// as project's developer would, against the suite's gateway; its output
// goes to logPath. It gets the user's environment without any of the
// services' settings: only the API's URL and the project's key.
func (s *Suite) StartListener(bin string, project Credentials, forwardTo, logPath string) (*Process, error) {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SUNDIAL_") && !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "BENCH_") {
			env = append(env, kv)
		}
	}
	env = append(env, "SUNDIAL_API_URL="+s.APIBase, "SUNDIAL_API_KEY="+project.APIKey)
	return StartProcess("listener", bin, []string{"listen", "--forward-to", forwardTo, "--output", "json"}, env, logPath)
}

// Presence is what the gateways' listener_presence rows say of a project.
type Presence struct {
	// Listening says a row is connected and was seen within 30 s: the
	// scheduler sends the project's hooks to its listeners.
	Listening bool
	// Sockets is the sockets of the project the connected rows count.
	Sockets int
}

// ListenerPresence reads the project's presence (admin.sql).
func (s *Suite) ListenerPresence(ctx context.Context, projectID string) (Presence, error) {
	conn, err := pgx.Connect(ctx, s.DBURL)
	if err != nil {
		return Presence{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var p Presence
	if err := conn.QueryRow(ctx, statement("listener-presence", ""), projectID).Scan(&p.Listening, &p.Sockets); err != nil {
		return Presence{}, fmt.Errorf("listener presence: %w", err)
	}
	return p, nil
}
