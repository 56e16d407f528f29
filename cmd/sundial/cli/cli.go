// Package cli is the sundial command line (cobra): login, listen, hooks,
// bulk jobs, sequences, ordering keys, config (sundial.toml) and version.
// It lives outside package main so that tests run each command in-process,
// with their own input, output, environment and config directory.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	sundial "github.com/sundial-run/sundial/sdk"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1 // the command failed
	ExitUsage = 2 // the command line was wrong
)

// Env is what a command reads and writes besides its arguments.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment (SUNDIAL_API_KEY, SUNDIAL_API_URL).
	Getenv func(string) string
	// ConfigDir holds sundial/config.json; empty: os.UserConfigDir().
	ConfigDir string
	// HTTPClient calls the API; nil: the SDK's default.
	HTTPClient *http.Client
	// Version is the tool's version, as the build stamped it.
	Version string
	// Terminal says Stdin is a user at a terminal, whom a command may ask
	// (config apply, before deleting); false in scripts and CI.
	Terminal bool
}

// Stdio is the process's own Env.
func Stdio(version string) Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Version: version,
		Terminal: isTerminal(os.Stdin)}
}

// isTerminal reports whether f is a character device: a terminal, not a
// pipe or a file.
func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// exitCode ends a command with this code and no message: its output said
// it all (diff's changes).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// usageError is a wrong command line: exit code 2 after the message.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// usageOf is a wrong command line of cmd, named after the tool's own name
// that printError puts first ("sundial: hooks get: give one hook id").
func usageOf(cmd *cobra.Command, format string, args ...any) error {
	if cmd == cmd.Root() {
		return usagef(format, args...)
	}
	return usagef("%s: %s", strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), fmt.Sprintf(format, args...))
}

// The output formats of --output.
const (
	outputText = "text"
	outputJSON = "json"
)

// state is one run: its Env and the flags every command shares.
type state struct {
	env    Env
	output string
}

func (s *state) json() bool { return s.output == outputJSON }

// Run runs the command that args (without the program name) name, and
// returns the process's exit code.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	s := &state{env: env, output: outputText}
	root := newRoot(s)
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	if isUsage(err) {
		s.printError(err)
		if !s.json() {
			fmt.Fprintf(env.Stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return ExitUsage
	}
	s.printError(s.hint(err))
	return ExitError
}

// hint adds what to do to an API key the API refused (401 or 403), saying
// where the key came from: a key in the environment wins over the one
// `sundial login` saved, which is easy to forget.
func (s *state) hint(err error) error {
	var apiErr *sundial.APIError
	if !errors.As(err, &apiErr) || (apiErr.StatusCode != http.StatusUnauthorized && apiErr.StatusCode != http.StatusForbidden) {
		return err
	}
	if s.env.Getenv(envAPIKey) != "" {
		return fmt.Errorf("%w\nThe API key comes from %s, which wins over the one `sundial login` saved: "+
			"unset it, or set it to a valid key", err, envAPIKey)
	}
	return fmt.Errorf("%w\nThe API key `sundial login` saved was refused (revoked, or its project deleted): "+
		"run `sundial login` with a valid key", err)
}

// isUsage tells a wrong command line from a failure. Cobra's own errors
// (an unknown command) are plain errors; flag errors come through
// flagError.
func isUsage(err error) bool {
	var ue *usageError
	return errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") ||
		strings.HasPrefix(err.Error(), "unknown flag") || strings.HasPrefix(err.Error(), "unknown shorthand flag")
}

// printError writes err on stderr: a line of text, or with --output json
// one object with the API's code, the fields at fault and the request id.
func (s *state) printError(err error) {
	if !s.json() {
		fmt.Fprintf(s.env.Stderr, "sundial: %s\n", say(err))
		return
	}
	out := struct {
		Error     string   `json:"error"`
		Usage     bool     `json:"usage,omitempty"`
		Status    int      `json:"status,omitempty"`
		Code      string   `json:"code,omitempty"`
		Fields    []string `json:"fields,omitempty"`
		RequestID string   `json:"requestId,omitempty"`
	}{Error: say(err), Usage: isUsage(err)}
	var apiErr *sundial.APIError
	if errors.As(err, &apiErr) {
		out.Status, out.Code, out.Fields, out.RequestID = apiErr.StatusCode, apiErr.Code, apiErr.Fields(), apiErr.RequestID
	}
	_ = json.NewEncoder(s.env.Stderr).Encode(out)
}

// emit writes v as one JSON object with --output json, else calls text.
func (s *state) emit(v any, text func(w io.Writer)) error {
	if s.json() {
		return json.NewEncoder(s.env.Stdout).Encode(v)
	}
	text(s.env.Stdout)
	return nil
}

func newRoot(s *state) *cobra.Command {
	root := &cobra.Command{
		Use:   "sundial",
		Short: "Sundial's command-line tool: schedule hooks, and receive deliveries on this machine",
		Long: "Sundial's command-line tool.\n\n" +
			"Credentials come from `sundial login` (kept in the user's config directory), or from\n" +
			"SUNDIAL_API_KEY and SUNDIAL_API_URL, which win over the file.",
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if s.output != outputText && s.output != outputJSON {
				out := s.output
				s.output = outputText
				return usagef("--output: %q is neither text nor json", out)
			}
			return nil
		},
	}
	// `sundial --version` says what `sundial version` says.
	root.Version = s.env.Version
	root.SetVersionTemplate(fmt.Sprintf("sundial {{.Version}} (sdk %s)\n", sundial.Version))
	root.CompletionOptions.HiddenDefaultCmd = false
	root.PersistentFlags().StringVarP(&s.output, "output", "o", outputText, "output format: text or json")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageOf(c, "%v", err)
	})
	root.AddCommand(loginCommand(s), listenCommand(s), hooksCommand(s), bulkJobsCommand(s), sequencesCommand(s),
		orderingKeysCommand(s), configCommand(s), versionCommand(s))
	return root
}

// noArgs refuses stray arguments, naming the command.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageOf(cmd, "unexpected argument %q", args[0])
	}
	return nil
}

// idArgs wants one hook id or more.
func idArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageOf(cmd, "give one hook id or more")
	}
	return nil
}

func versionCommand(s *state) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tool's and the SDK's versions",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			v := struct {
				Version    string `json:"version"`
				SDKVersion string `json:"sdkVersion"`
			}{s.env.Version, sundial.Version}
			return s.emit(v, func(w io.Writer) {
				fmt.Fprintf(w, "sundial %s (sdk %s)\n", v.Version, v.SDKVersion)
			})
		},
	}
}
