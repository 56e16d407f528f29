package failclass_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/event/eventv1"
	"github.com/sundial-run/sundial/pkg/failclass"
)

func TestEveryClassHasOneWord(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for n := range eventv1.FailureClass_name {
		c := eventv1.FailureClass(n)
		w := failclass.Word(c)
		if c == eventv1.FailureClass_FAILURE_CLASS_UNSPECIFIED {
			require.Empty(t, w)
			continue
		}
		require.NotEmpty(t, w, "%s has no word", c)
		require.False(t, seen[w], "%q names two classes", w)
		seen[w] = true
		back, ok := failclass.Parse(w)
		require.True(t, ok)
		require.Equal(t, c, back)
	}
	require.Len(t, failclass.Words(), len(seen))
	require.Equal(t, failclass.DNS, failclass.Words()[0], "in the enum's order")
}

func TestOfStatus(t *testing.T) {
	t.Parallel()
	for code, want := range map[int]string{
		http.StatusGone: "410", http.StatusTooManyRequests: "429", http.StatusRequestEntityTooLarge: "too_large",
		http.StatusNotFound: "4xx", http.StatusBadRequest: "4xx", http.StatusInternalServerError: "5xx",
		http.StatusServiceUnavailable: "5xx", http.StatusFound: "redirect", http.StatusPermanentRedirect: "redirect",
		http.StatusOK: "4xx",
	} {
		require.Equal(t, want, failclass.Word(failclass.OfStatus(code)), code)
	}
}

func TestPolicy(t *testing.T) {
	t.Parallel()
	require.NoError(t, failclass.Check("410", "pause"))
	require.NoError(t, failclass.Check("4xx", "fail"))
	require.NoError(t, failclass.Check("listener", "retry"))
	require.ErrorContains(t, failclass.Check("listener", "pause"), "cannot pause")
	require.ErrorContains(t, failclass.Check("418", "fail"), "unknown failure class")
	require.ErrorContains(t, failclass.Check("410", "drop"), "unknown action")

	var none failclass.Policy
	require.Equal(t, failclass.Retry, none.Of(eventv1.FailureClass_FAILURE_CLASS_GONE), "the default is today's: retry")
	require.Equal(t, failclass.Retry, none.Of(eventv1.FailureClass_FAILURE_CLASS_UNSPECIFIED))

	p := none.With(map[string]string{"410": "pause", "4xx": "fail", "5xx": "retry"})
	require.Equal(t, failclass.Policy{"410": failclass.Pause, "4xx": failclass.Fail}, p, "retry is the default: not kept")
	require.Equal(t, failclass.Pause, p.Of(eventv1.FailureClass_FAILURE_CLASS_GONE))
	eff := p.Effective()
	require.Len(t, eff, len(failclass.Words()))
	require.Equal(t, "retry", eff["dns"])
	require.Equal(t, "fail", eff["4xx"])

	back, err := failclass.Decode(p.Encode())
	require.NoError(t, err)
	require.Equal(t, p, back)
	back, err = failclass.Decode([]byte(`{"410":"pause","nope":"fail","listener":"pause"}`))
	require.NoError(t, err)
	require.Equal(t, failclass.Policy{"410": failclass.Pause}, back, "what this release cannot take is retried")
	require.Equal(t, failclass.Policy{"4xx": failclass.Fail}, p.With(map[string]string{"410": ""}))
}
