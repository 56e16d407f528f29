package sequence

import (
	"fmt"
	"strings"
)

// checkDependsOn checks each step's dependencies name other steps, each
// once, and copies them into steps. It reports whether all of them did, so
// that cycles are looked for only in a graph whose edges are known.
func checkDependsOn(reqs []StepRequest, index map[string]int, steps []Step, p *problems) bool {
	ok := true
	for i, r := range reqs {
		seen := map[string]bool{}
		for k, dep := range r.DependsOn {
			field := fmt.Sprintf("steps[%d].dependsOn[%d]", i, k)
			j, known := index[dep]
			switch {
			case !known:
				p.add(field, "unknown step %q", dep)
			case j == i:
				p.add(field, "a step cannot depend on itself")
			case seen[dep]:
				p.add(field, "%q is listed twice", dep)
			default:
				seen[dep] = true
				steps[i].DependsOn = append(steps[i].DependsOn, dep)
				continue
			}
			ok = false
		}
	}
	return ok
}

// checkCycles reports the first dependency cycle found, walking the steps
// in order: "steps: cycle extract -> load -> extract". Ten steps at most,
// so the depth-first walk is at most ten deep.
func checkCycles(steps []Step, index map[string]int, p *problems) {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(steps))
	var path []string
	var visit func(i int) []string
	visit = func(i int) []string {
		state[i] = onPath
		path = append(path, steps[i].Name)
		for _, dep := range steps[i].DependsOn {
			j := index[dep]
			switch state[j] {
			case onPath:
				start := indexOf(path, dep)
				return append(append([]string{}, path[start:]...), dep)
			case unseen:
				if cycle := visit(j); cycle != nil {
					return cycle
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i := range steps {
		if state[i] != unseen {
			continue
		}
		if cycle := visit(i); cycle != nil {
			p.add("steps", "cycle %s", strings.Join(cycle, " -> "))
			return
		}
	}
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return 0
}
