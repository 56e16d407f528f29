package checker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/tests/internal/checker"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 500_000_000, time.UTC)

func arrival(id string, at time.Duration) checker.Arrival {
	return checker.Arrival{ID: id, At: t0.Add(at), PostAt: t0, Timestamp: t0.Add(at).Unix()}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		accepted      map[string]time.Time
		arrivals      []checker.Arrival
		maxDuplicates int
		wantLost      []string
		wantUnknown   []string
		wantDups      map[string]int
		wantEarly     []string
		wantProblems  int
	}{
		{
			name:     "every hook once, on time",
			accepted: map[string]time.Time{"a": t0, "b": t0},
			arrivals: []checker.Arrival{arrival("b", time.Millisecond), arrival("a", 0)},
			wantDups: map[string]int{},
		},
		{
			name:         "a hook never arrived",
			accepted:     map[string]time.Time{"a": t0, "b": t0, "c": t0},
			arrivals:     []checker.Arrival{arrival("a", 0)},
			wantLost:     []string{"b", "c"},
			wantDups:     map[string]int{},
			wantProblems: 1,
		},
		{
			name:         "an id nobody scheduled",
			accepted:     map[string]time.Time{"a": t0},
			arrivals:     []checker.Arrival{arrival("a", 0), arrival("x", 0), arrival("x", time.Second)},
			wantUnknown:  []string{"x"},
			wantDups:     map[string]int{},
			wantProblems: 1,
		},
		{
			name:          "duplicates within the bound",
			accepted:      map[string]time.Time{"a": t0, "b": t0},
			arrivals:      []checker.Arrival{arrival("a", 0), arrival("a", time.Second), arrival("b", 0), arrival("b", 2*time.Second)},
			maxDuplicates: 2,
			wantDups:      map[string]int{"a": 1, "b": 1},
		},
		{
			name:          "duplicates over the bound",
			accepted:      map[string]time.Time{"a": t0},
			arrivals:      []checker.Arrival{arrival("a", 0), arrival("a", time.Second), arrival("a", 2*time.Second)},
			maxDuplicates: 1,
			wantDups:      map[string]int{"a": 2},
			wantProblems:  1,
		},
		{
			name:         "one nanosecond early is early",
			accepted:     map[string]time.Time{"a": t0},
			arrivals:     []checker.Arrival{arrival("a", -time.Nanosecond)},
			wantDups:     map[string]int{},
			wantEarly:    []string{"a"},
			wantProblems: 1,
		},
		{
			name:     "signed in the second of postAt is on time",
			accepted: map[string]time.Time{"a": t0},
			arrivals: []checker.Arrival{{ID: "a", At: t0, Timestamp: t0.Unix()}},
			wantDups: map[string]int{},
		},
		{
			name:         "signed the second before postAt is early",
			accepted:     map[string]time.Time{"a": t0},
			arrivals:     []checker.Arrival{{ID: "a", At: t0.Add(time.Second), Timestamp: t0.Unix() - 1}},
			wantDups:     map[string]int{},
			wantEarly:    []string{"a"},
			wantProblems: 1,
		},
		{
			name:         "judged by the accepted postAt, not the body's",
			accepted:     map[string]time.Time{"a": t0.Add(time.Hour)},
			arrivals:     []checker.Arrival{arrival("a", time.Minute)},
			wantDups:     map[string]int{},
			wantEarly:    []string{"a"},
			wantProblems: 1,
		},
		{
			name:         "everything wrong at once",
			accepted:     map[string]time.Time{"a": t0, "lost": t0},
			arrivals:     []checker.Arrival{arrival("a", -time.Second), arrival("a", 0), arrival("x", 0)},
			wantLost:     []string{"lost"},
			wantUnknown:  []string{"x"},
			wantDups:     map[string]int{"a": 1},
			wantEarly:    []string{"a"},
			wantProblems: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := checker.Check(tt.accepted, tt.arrivals)

			require.Equal(t, tt.wantLost, r.Lost)
			require.Equal(t, tt.wantUnknown, r.Unknown)
			require.Equal(t, tt.wantDups, r.Duplicates)
			var early []string
			for _, e := range r.Early {
				early = append(early, e.ID)
			}
			require.Equal(t, tt.wantEarly, early)
			require.Len(t, r.Problems(tt.maxDuplicates), tt.wantProblems, "problems: %v", r.Problems(tt.maxDuplicates))
			require.Equal(t, len(tt.accepted), r.Accepted)
			require.Equal(t, len(tt.arrivals), r.Arrivals)
		})
	}
}

func TestEarlyByHowMuch(t *testing.T) {
	t.Parallel()
	r := checker.Check(map[string]time.Time{"a": t0}, []checker.Arrival{arrival("a", -3*time.Millisecond)})

	require.Len(t, r.Early, 1)
	require.Equal(t, 3*time.Millisecond, r.Early[0].By)
	require.False(t, r.Early[0].Signed)
	require.Contains(t, r.Problems(0)[0], "3ms early")
}

func TestTotalDuplicates(t *testing.T) {
	t.Parallel()
	r := checker.Report{Duplicates: map[string]int{"a": 2, "b": 1}}

	require.Equal(t, 3, r.TotalDuplicates())
	require.Contains(t, r.String(), "duplicates 3 (over 2 ids)")
}
