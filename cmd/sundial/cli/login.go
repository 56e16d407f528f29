package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	sundial "github.com/sundial-run/sundial/sdk"
)

func loginCommand(s *state) *cobra.Command {
	var apiURL, apiKey string
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Check an API key and keep it, with the API's address, for the other commands",
		Long: "Checks the API key by reading the project, then keeps the address and the key in\n" +
			"<user config dir>/sundial/config.json (mode 0600). Without --api-key the key is read\n" +
			"from standard input. SUNDIAL_API_KEY and SUNDIAL_API_URL, when set, win over the file.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return s.login(cmd, apiURL, apiKey)
		},
	}
	cmd.Flags().StringVar(&apiURL, "api-url", "", "the API's address (default: $SUNDIAL_API_URL, the saved one, or "+sundial.DefaultBaseURL+")")
	cmd.Flags().StringVar(&apiKey, "api-key", "", "the project's API key (default: read from standard input)")
	return cmd
}

func (s *state) login(cmd *cobra.Command, apiURL, apiKey string) error {
	path, err := s.configPath()
	if err != nil {
		return err
	}
	saved, err := loadConfig(path)
	if err != nil {
		return err
	}
	if apiURL == "" {
		apiURL = firstNonEmpty(s.env.Getenv(envAPIURL), saved.APIURL, sundial.DefaultBaseURL)
	}
	if _, err := checkHTTPURL("--api-url", apiURL); err != nil {
		return err
	}
	if apiKey == "" {
		if apiKey, err = s.promptKey(); err != nil {
			return err
		}
	}
	c := config{APIURL: strings.TrimRight(apiURL, "/"), APIKey: apiKey}
	project, err := s.client(c).Project.Get(cmd.Context())
	var apiErr *sundial.APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("--api-key: the API at %s refused the key: %w", c.APIURL, err)
	}
	if err != nil {
		return fmt.Errorf("check the key against %s: %w", c.APIURL, err)
	}
	if err := saveConfig(path, c); err != nil {
		return err
	}
	out := struct {
		APIURL      string `json:"apiUrl"`
		ProjectID   string `json:"projectId"`
		ProjectName string `json:"projectName"`
		ConfigPath  string `json:"configPath"`
	}{c.APIURL, project.ID, project.Name, path}
	return s.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "Logged in to %s as project %s (%s).\nSaved in %s.\n", out.APIURL, out.ProjectName, out.ProjectID, path)
	})
}

// promptKey reads the key from standard input (a terminal, or a pipe).
func (s *state) promptKey() (string, error) {
	if s.env.Stdin == nil {
		return "", usagef("--api-key: no key given and no standard input to read it from")
	}
	fmt.Fprint(s.env.Stderr, "API key: ")
	line, err := bufio.NewReader(s.env.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the API key: %w", err)
	}
	key := strings.TrimSpace(line)
	if key == "" {
		return "", usagef("--api-key: no key given (pass --api-key or type it on standard input)")
	}
	return key, nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
