// Command dashboardrules checks the shape of a Grafana dashboard and
// prints each of its panels' PromQL queries as a recording rule, so that
// `promtool check rules` parses every query (make check-alerts): a
// dashboard that Grafana loads but whose panels fail to query is caught
// offline.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// dashboard is the part of Grafana's dashboard JSON model this checks.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Schema     int     `json:"schemaVersion"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource datasource `json:"datasource"`
	GridPos    struct {
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Targets []struct {
		RefID      string     `json:"refId"`
		Expr       string     `json:"expr"`
		Datasource datasource `json:"datasource"`
	} `json:"targets"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// rateInterval stands in for Grafana's $__rate_interval, which PromQL
// does not know.
const rateInterval = "5m"

// wantDatasource is the data source every query uses: the dashboard's
// variable, so that it works whatever the Prometheus data source is named.
var wantDatasource = datasource{Type: "prometheus", UID: "${datasource}"}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dashboardrules DASHBOARD.json > rules.yaml")
		os.Exit(2)
	}
	rules, err := check(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "dashboardrules: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	fmt.Print(rules)
}

// check reads the dashboard, reports every problem of its shape, and
// returns its queries as a rule file.
func check(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return "", fmt.Errorf("not a dashboard: %w", err)
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if d.UID == "" || d.Title == "" || d.Schema == 0 {
		fail("uid, title and schemaVersion are required")
	}
	if len(d.Templating.List) == 0 || d.Templating.List[0].Name != "datasource" || d.Templating.List[0].Type != "datasource" {
		fail("the first variable must be the data source variable \"datasource\"")
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] || p.ID == 0 {
			fail("panel %q: id %d missing or used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.Title == "" {
			fail("panel %d: a title and a grid position are required", p.ID)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource != wantDatasource || len(p.Targets) == 0 {
			fail("panel %q: needs queries on data source %v", p.Title, wantDatasource)
		}
		for _, t := range p.Targets {
			if t.Datasource != wantDatasource || t.Expr == "" || t.RefID == "" {
				fail("panel %q, query %q: needs a refId, an expr and data source %v", p.Title, t.RefID, wantDatasource)
			}
			expr := strings.ReplaceAll(t.Expr, "$__rate_interval", rateInterval)
			fmt.Fprintf(&b, "      - record: dashboard:panel_%d_%s\n        expr: %q\n", p.ID, t.RefID, expr)
		}
	}
	return b.String(), errors.Join(errs...)
}
