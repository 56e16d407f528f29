package apibench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Report is what a benchmark run found, as written to the JSON file.
type Report struct {
	Machine Machine      `json:"machine"`
	Post    []PostReport `json:"post"`
	Load    LoadReport   `json:"load"`
	List    []ListReport `json:"list"`
}

// Machine describes where the figures were measured.
type Machine struct {
	CPUs        int    `json:"cpus"`
	MemoryBytes int64  `json:"memoryBytes,omitempty"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	GoVersion   string `json:"goVersion"`
	PostgreSQL  string `json:"postgresql,omitempty"`
	// LoadAverage and LoadAverageAfter are the 1-minute load averages when
	// the run started and ended: other work on the machine skews the
	// figures.
	LoadAverage      string `json:"loadAverage,omitempty"`
	LoadAverageAfter string `json:"loadAverageAfter,omitempty"`
}

// Finish records what the machine looked like at the end of the run.
func (m *Machine) Finish() {
	m.LoadAverageAfter = loadAverage()
}

// PostReport is one POST /v1/hooks run.
type PostReport struct {
	Name            string         `json:"name"`
	Projects        int            `json:"projects"`
	Clients         int            `json:"clients"`
	DurationSeconds float64        `json:"durationSeconds"`
	Requests        int            `json:"requests"`
	Created         int            `json:"created"`
	HooksPerSecond  float64        `json:"hooksPerSecond"`
	P50Ms           float64        `json:"p50Ms"`
	P99Ms           float64        `json:"p99Ms"`
	MaxMs           float64        `json:"maxMs"`
	Errors          int            `json:"errors"`
	Statuses        map[string]int `json:"statuses"`
	FirstFailure    string         `json:"firstFailure,omitempty"`
}

// LoadReport is the COPY of the hooks the list timings run on.
type LoadReport struct {
	HooksPerProject int     `json:"hooksPerProject"`
	Projects        int     `json:"projects"`
	Seconds         float64 `json:"seconds"`
	RowsPerSecond   float64 `json:"rowsPerSecond"`
	VacuumSeconds   float64 `json:"vacuumSeconds"`
}

// ListReport is one GET /v1/hooks timing.
type ListReport struct {
	Name      string  `json:"name"`
	Available bool    `json:"available"`
	Status    int     `json:"status,omitempty"`
	Note      string  `json:"note,omitempty"`
	Samples   int     `json:"samples"`
	P50Ms     float64 `json:"p50Ms"`
	P99Ms     float64 `json:"p99Ms"`
	MaxMs     float64 `json:"maxMs"`
}

// NewPostReport summarises a POST run of clients spread over projects;
// created is the status of success.
func NewPostReport(name string, projects, clients int, r Run, created int) PostReport {
	lat := Summarize(r.Latencies)
	p := PostReport{
		Name:            name,
		Projects:        projects,
		Clients:         clients,
		DurationSeconds: round(r.Elapsed.Seconds()),
		Requests:        len(r.Latencies) + r.Failures,
		Created:         r.Count(created),
		P50Ms:           ms(lat.P50),
		P99Ms:           ms(lat.P99),
		MaxMs:           ms(lat.Max),
		Errors:          len(r.Latencies) + r.Failures - r.Count(created),
		Statuses:        map[string]int{},
	}
	if r.Elapsed > 0 {
		p.HooksPerSecond = round(float64(p.Created) / r.Elapsed.Seconds())
	}
	for status, n := range r.Statuses {
		p.Statuses[strconv.Itoa(status)] = n
	}
	if r.Failures > 0 {
		p.Statuses["no answer"] = r.Failures
		p.FirstFailure = r.FirstFailure.Error()
	}
	return p
}

// NewListReport summarises the latencies of one list timing.
func NewListReport(name string, latencies []time.Duration) ListReport {
	lat := Summarize(latencies)
	return ListReport{Name: name, Available: true, Samples: lat.Count, P50Ms: ms(lat.P50), P99Ms: ms(lat.P99), MaxMs: ms(lat.Max)}
}

func round(f float64) float64 { return math.Round(f*100) / 100 }

// Print writes the report as a table.
func (r Report) Print(out io.Writer) error {
	m := r.Machine
	var b strings.Builder
	fmt.Fprintf(&b, "\nSundial API benchmark: %d CPUs, %.1f GiB, %s/%s, %s, PostgreSQL %s, load average %s at the start, %s at the end\n\n",
		m.CPUs, float64(m.MemoryBytes)/(1<<30), m.OS, m.Arch, m.GoVersion, m.PostgreSQL, m.LoadAverage, m.LoadAverageAfter)
	fmt.Fprintf(&b, "%-46s %8s %8s %9s %8s %8s %8s %7s\n", "POST /v1/hooks (closed loop)", "clients", "seconds", "hooks/s", "p50 ms", "p99 ms", "max ms", "errors")
	for _, p := range r.Post {
		fmt.Fprintf(&b, "%-46s %8d %8.1f %9.0f %8.2f %8.2f %8.2f %7d\n", p.Name, p.Clients, p.DurationSeconds, p.HooksPerSecond, p.P50Ms, p.P99Ms, p.MaxMs, p.Errors)
	}
	fmt.Fprintf(&b, "\n%-46s %8s %8s %8s %8s\n", fmt.Sprintf("GET /v1/hooks (%d hooks x %d projects)", r.Load.HooksPerProject, r.Load.Projects),
		"samples", "p50 ms", "p99 ms", "max ms")
	for _, l := range r.List {
		if !l.Available {
			fmt.Fprintf(&b, "%-46s not available: %s\n", l.Name, l.Note)
			continue
		}
		fmt.Fprintf(&b, "%-46s %8d %8.2f %8.2f %8.2f\n", l.Name, l.Samples, l.P50Ms, l.P99Ms, l.MaxMs)
	}
	b.WriteString("\n")
	for _, p := range r.Post {
		fmt.Fprintf(&b, "%s: statuses %v", p.Name, p.Statuses)
		if p.FirstFailure != "" {
			fmt.Fprintf(&b, ", first request without an answer: %s", p.FirstFailure)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "hooks loaded by COPY: %d in %.1f s (%.0f rows/s), then VACUUM ANALYZE in %.1f s\n",
		r.Load.HooksPerProject*r.Load.Projects, r.Load.Seconds, r.Load.RowsPerSecond, r.Load.VacuumSeconds)
	_, err := io.WriteString(out, b.String())
	return err
}

// WriteJSON writes the report to path, creating its folder.
func (r Report) WriteJSON(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report folder: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// ThisMachine describes the machine running the benchmark; memory and load
// are read from /proc on Linux and left out elsewhere.
func ThisMachine(postgresVersion string) Machine {
	return Machine{
		CPUs:        runtime.NumCPU(),
		MemoryBytes: memTotal(),
		OS:          runtime.GOOS,
		Arch:        runtime.GOARCH,
		GoVersion:   runtime.Version(),
		PostgreSQL:  postgresVersion,
		LoadAverage: loadAverage(),
	}
}

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kib << 10
		}
	}
	return 0
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}
