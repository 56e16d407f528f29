package stall

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBetweenReturnsTheStallsThatOverlap(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := &Watch{stalls: []Stall{
		{At: base, Length: time.Second},
		{At: base.Add(10 * time.Second), Length: 2 * time.Second},
	}}
	require.Len(t, w.Between(base.Add(500*time.Millisecond), base.Add(5*time.Second)), 1, "overlaps the first's end")
	require.Empty(t, w.Between(base.Add(2*time.Second), base.Add(9*time.Second)), "between the two")
	require.Len(t, w.Between(base.Add(-time.Second), base.Add(11*time.Second)), 2)
	require.Equal(t, 2*time.Second, w.Longest())
}

func TestAWatchSeesAProcessThatDidNotRun(t *testing.T) {
	t.Parallel()
	w := &Watch{threshold: 50 * time.Millisecond}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() { w.run(done); close(stopped) }()
	// The process stopped by a signal and continued 300 ms later by a
	// child: a stall as a loaded machine makes one, without the load. A
	// stop before the watch's goroutine has taken its first reading goes
	// unseen (on a busy machine it may start late), so stop again until
	// one is seen.
	pid := strconv.Itoa(os.Getpid())
	require.Eventually(t, func() bool {
		cont := exec.Command("sh", "-c", "kill -STOP "+pid+"; sleep 0.3; kill -CONT "+pid)
		require.NoError(t, cont.Run())
		return w.Longest() >= 50*time.Millisecond
	}, 10*time.Second, 10*time.Millisecond)
	close(done)
	<-stopped
}
