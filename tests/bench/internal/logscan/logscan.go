// Package logscan reads the services' JSON log lines back to time the
// stages of a delivery: when hooks were claimed (scheduler), delivered
// (dispatcher) and their results applied (scheduler). The services log one
// line per unit of work, so this costs them nothing extra.
package logscan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"time"
)

// Event is one log line of interest: when, how many hooks it covers, and
// the claim path (poll or just-in-time) when it is a claim.
type Event struct {
	At    time.Time
	Count int
	Via   string
}

// Stage is how a stage progressed, in milliseconds after a reference
// instant (the scenario's first postAt).
type Stage struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	// FirstMs, HalfMs and AllMs are when the first, the half-way and the
	// last of Count hooks passed the stage.
	FirstMs float64 `json:"firstMs"`
	HalfMs  float64 `json:"halfMs"`
	AllMs   float64 `json:"allMs"`
	// PerSecond is Count over the time from the first to the last.
	PerSecond float64 `json:"perSecond"`
	// ByVia splits claims by path: poll or just-in-time.
	ByVia map[string]int `json:"byVia,omitempty"`
}

type line struct {
	Time  time.Time `json:"time"`
	Msg   string    `json:"msg"`
	Count int       `json:"count"`
	Via   string    `json:"via"`
}

// Scan returns the events of the lines whose msg is msg, in time order. A
// line without a count field counts one hook.
func Scan(path, msg string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	needle := `"msg":"` + msg + `"`
	var out []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		raw := sc.Bytes()
		if !strings.Contains(string(raw), needle) {
			continue
		}
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			continue // not one of the services' JSON lines
		}
		n := l.Count
		if !strings.Contains(string(raw), `"count":`) {
			n = 1
		}
		out = append(out, Event{At: l.Time, Count: n, Via: l.Via})
	}
	slices.SortFunc(out, func(a, b Event) int { return a.At.Compare(b.At) })
	return out, sc.Err()
}

// Summarize describes events relative to ref, counting only events at or
// after since (earlier ones belong to another phase of the run).
func Summarize(name string, events []Event, ref, since time.Time) Stage {
	st := Stage{Name: name, ByVia: map[string]int{}}
	var first, last time.Time
	for _, e := range events {
		if e.At.Before(since) {
			continue
		}
		if first.IsZero() {
			first = e.At
		}
		last = e.At
		st.Count += e.Count
		if e.Via != "" {
			st.ByVia[e.Via] += e.Count
		}
	}
	if st.Count == 0 {
		return st
	}
	half, seen := time.Time{}, 0
	for _, e := range events {
		if e.At.Before(since) {
			continue
		}
		seen += e.Count
		if seen*2 >= st.Count {
			half = e.At
			break
		}
	}
	ms := func(t time.Time) float64 { return float64(t.Sub(ref).Microseconds()) / 1000 }
	st.FirstMs, st.HalfMs, st.AllMs = ms(first), ms(half), ms(last)
	if d := last.Sub(first); d > 0 {
		st.PerSecond = float64(int(float64(st.Count)/d.Seconds()*10)) / 10
	}
	if len(st.ByVia) == 0 {
		st.ByVia = nil
	}
	return st
}

// Counter counts the hooks of a log's lines whose msg is msg as the log
// grows, reading each byte once: a line's count field, or 1 without one
// (as Scan does).
type Counter struct {
	path   string
	needle []byte
	offset int64
	count  int
}

// NewCounter counts lines of path whose msg is msg.
func NewCounter(path, msg string) *Counter {
	return &Counter{path: path, needle: []byte(`"msg":"` + msg + `"`)}
}

// Poll reads the whole lines added since the last call and returns the
// count so far.
func (c *Counter) Poll() (int, error) {
	f, err := os.Open(c.path)
	if err != nil {
		return c.count, err
	}
	defer f.Close()
	if _, err := f.Seek(c.offset, 0); err != nil {
		return c.count, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		raw, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: skip it whole.
			c.offset += int64(len(raw))
			for err == bufio.ErrBufferFull {
				raw, err = r.ReadSlice('\n')
				c.offset += int64(len(raw))
			}
			continue
		}
		if err != nil {
			// io.EOF: a partial last line is read again next time.
			return c.count, nil
		}
		c.offset += int64(len(raw))
		if bytes.Contains(raw, c.needle) {
			c.count += lineCount(raw)
		}
	}
}

// lineCount is the count field of a log line, 1 when it has none.
func lineCount(raw []byte) int {
	var l line
	if !bytes.Contains(raw, []byte(`"count":`)) || json.Unmarshal(raw, &l) != nil {
		return 1
	}
	return l.Count
}

// Record is one log line's time and integer fields.
type Record struct {
	At     time.Time
	Values map[string]int64
}

// ScanFields returns the lines whose msg is msg, in time order, each with
// the named integer fields it has (e.g. the scheduler's "expired hooks
// deleted" lines and their hooks_deleted and attempts_deleted).
func ScanFields(path, msg string, fields ...string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	needle := []byte(`"msg":"` + msg + `"`)
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		raw := sc.Bytes()
		if !bytes.Contains(raw, needle) {
			continue
		}
		var l map[string]any
		if err := json.Unmarshal(raw, &l); err != nil {
			continue // not one of the services' JSON lines
		}
		at, _ := l["time"].(string)
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			continue
		}
		r := Record{At: t, Values: map[string]int64{}}
		for _, name := range fields {
			if v, ok := l[name].(float64); ok {
				r.Values[name] = int64(v)
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return a.At.Compare(b.At) })
	return out, sc.Err()
}
