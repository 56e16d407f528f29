package configdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// marker is a line that opens or closes a generated table:
// <!-- configdoc:NAME:begin --> and <!-- configdoc:NAME:end -->.
var marker = regexp.MustCompile(`^<!-- configdoc:([a-z-]+):(begin|end) -->$`)

// Generate returns File, from the repository at root, with every table
// between markers written anew from the services' Configs.
func Generate(root string) (string, error) {
	c, err := readConfig(root)
	if err != nil {
		return "", err
	}
	tables, err := c.tables()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(root, File))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", File, err)
	}
	placed := map[string]bool{}
	out, err := fill(string(b), tables, placed)
	if err != nil {
		return "", fmt.Errorf("%s: %w", File, err)
	}
	// A table the file does not show would leave its variables
	// undocumented.
	for name := range tables {
		if !placed[name] {
			return "", fmt.Errorf("%s has no markers of table %q", File, name)
		}
	}
	return out, nil
}

// Write writes what Generate returns.
func Write(root string) error {
	out, err := Generate(root)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, File), []byte(out), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", File, err)
	}
	return nil
}

// fill replaces what lies between each pair of markers of markdown with its
// table, noting the tables it placed.
func fill(markdown string, tables map[string][]row, placed map[string]bool) (string, error) {
	var out []string
	open := "" // the table being replaced
	for i, line := range strings.Split(markdown, "\n") {
		m := marker.FindStringSubmatch(strings.TrimSpace(line))
		switch {
		case m == nil && open != "":
			continue // the old table
		case m == nil:
			out = append(out, line)
		case m[2] == "begin" && open == "":
			rows, ok := tables[m[1]]
			if !ok {
				return "", fmt.Errorf("line %d: no table %q", i+1, m[1])
			}
			open, placed[m[1]] = m[1], true
			table := relink(render(rows, m[1] == "every-service"), filepath.Dir(File))
			out = append(out, line, strings.TrimSuffix(table, "\n"))
		case m[2] == "end" && open == m[1]:
			open = ""
			out = append(out, line)
		default:
			return "", fmt.Errorf("line %d: %s marker of %q inside %q", i+1, m[2], m[1], open)
		}
	}
	if open != "" {
		return "", fmt.Errorf("table %q has no end marker", open)
	}
	return strings.Join(out, "\n"), nil
}
