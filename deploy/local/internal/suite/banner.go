package suite

import (
	"fmt"
	"net"
	"strings"
)

// Info is what a running suite offers, shown in the banner.
type Info struct {
	// APIBase is the REST API root, e.g. http://localhost:8080/v1; empty
	// when no service listens.
	APIBase string
	// Postgres says which server is used and how it was found.
	Postgres string
	// DatabaseURL is the database the services use.
	DatabaseURL string
	// NATS says which NATS server is used.
	NATS string
	// ReceiverURL is the demo receiver's root, where the demo project delivers.
	ReceiverURL string
	// CAFile holds the demo receiver's CA certificate.
	CAFile string
	// Project is the demo project, nil with SUNDIAL_DEMO=false.
	Project *Credentials
	// ProjectReused is set when Project was kept from an earlier run.
	ProjectReused bool
	// ProjectFile keeps the demo project's keys for the next run.
	ProjectFile string
	// Login is the dashboard's demo user, nil without a demo project.
	Login *Login
	// AllowedPrivate is set when the runner (not the person) allowed
	// deliveries to private addresses.
	AllowedPrivate bool
}

// apiBase turns a listener address into a URL a person can paste:
// an unspecified host (":8080", "[::]:8080") becomes localhost.
func apiBase(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/v1"
}

// banner is printed to stdout once everything runs. It shows the demo
// project's keys on purpose: they exist to be pasted, and the database keeps
// only a hash of the API key (the plain key is in DemoFile, mode 0600).
// They never go to the logs; nor does the demo user's password, which is
// printed here only.
func banner(in Info) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("")
	line("Sundial is running. Press Ctrl-C to stop.")
	line("")
	if in.APIBase != "" {
		line("  API            %s", in.APIBase)
	}
	line("  PostgreSQL     %s", in.Postgres)
	line("  NATS           %s", in.NATS)
	line("  Demo receiver  %s (CA certificate %s)", in.ReceiverURL, in.CAFile)
	if in.AllowedPrivate {
		line("")
		line("  Deliveries to private and loopback addresses are allowed (SUNDIAL_DELIVERY_ALLOW_PRIVATE=true)")
		line("  so that the local demo receiver can be reached; set SUNDIAL_DELIVERY_ALLOW_PRIVATE=false to refuse them.")
	}
	if in.Project == nil {
		line("")
		line("  No demo project (SUNDIAL_DEMO=false). Create one with:")
		line("    go run ./services/gateway/cmd/gateway admin create-project --name NAME --domain HOST[:PORT]")
		line("")
		return b.String()
	}
	p := in.Project
	line("")
	if in.ProjectReused {
		line("Demo project, reused from %s (delivers to the demo receiver)", in.ProjectFile)
	} else {
		line("Demo project, new, kept in %s for the next run (delivers to the demo receiver)", in.ProjectFile)
	}
	line("  id             %s", p.ProjectID)
	line("  API key        %s", p.APIKey)
	line("  signing key    %s", p.SigningKey)
	if in.Login != nil && in.APIBase != "" {
		line("")
		line("Dashboard: %s/dashboard", strings.TrimSuffix(in.APIBase, "/v1"))
		line("  e-mail         %s", in.Login.Email)
		line("  password       %s (new each run)", in.Login.Password)
	}
	if in.APIBase != "" {
		line("")
		line("Schedule a hook in 5 s:")
		line(`  curl -sS -X POST %s/hooks -H "X-API-Key: %s" -H "Content-Type: application/json" -d '{"path":"/webhooks/demo","postIn":"5s","data":{"hello":"world"}}'`, in.APIBase, p.APIKey)
		line("")
		line("Get it (the id is in the answer above):")
		line(`  curl -sS %s/hooks/<id> -H "X-API-Key: %s"`, in.APIBase, p.APIKey)
	}
	line("")
	line("Deliveries that the demo receiver gets are logged below.")
	line("")
	return b.String()
}
