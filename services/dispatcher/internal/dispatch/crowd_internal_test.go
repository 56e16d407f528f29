package dispatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLargestCrowd(t *testing.T) {
	t.Parallel()
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, c := range []struct {
		name  string
		holds []time.Duration
		want  int
	}{
		{"one hook", []time.Duration{ms(50)}, 1},
		{"due together", []time.Duration{ms(50), ms(50), ms(50), ms(50.2)}, 4},
		{"a steady stream, one every 2 ms", []time.Duration{ms(10), ms(12), ms(14), ms(16)}, 1},
		{"two every 2 ms", []time.Duration{ms(10), ms(10.5), ms(12), ms(12.5), ms(14), ms(14.5)}, 2},
		{"a crowd after a stream", []time.Duration{ms(1), ms(5), ms(9), ms(100), ms(100), ms(100.9)}, 3},
		{"the window's edge", []time.Duration{ms(0), ms(1), ms(2)}, 2},
	} {
		require.Equal(t, c.want, largestCrowd(c.holds), c.name)
	}
}
