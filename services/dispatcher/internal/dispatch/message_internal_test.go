package dispatch

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestCanonicalIDIsUUIDString: a delivery's ids (its body's id, its
// result's) are spelled as uuid.UUID.String() spells them, whichever way
// the message spelled them.
func TestCanonicalIDIsUUIDString(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("0190b6a4-7f1e-7c3a-9f5e-2a1b3c4d5e6f")
	for _, s := range []string{
		id.String(), strings.ToUpper(id.String()), "{" + id.String() + "}",
		"urn:uuid:" + id.String(), strings.ReplaceAll(id.String(), "-", ""),
	} {
		parsed, err := uuid.Parse(s)
		require.NoError(t, err, s)
		require.Equal(t, id.String(), canonical(s, parsed), s)
	}
}

// TestSlotWaitLastsItsLengthEachTime: a message's waits for delivery slots
// share one timer, and each wait still lasts its whole length, even after
// an earlier wait ended with a slot and its timer then expired with no one
// waiting (in a bubble, so the time is the test's own).
func TestSlotWaitLastsItsLengthEachTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		h := &Handler{slots: make(chan struct{}, 1)}
		wait := slotWait{length: time.Second}
		defer wait.stop()
		require.True(t, h.takeDeliverySlot(ctx, &wait), "a free slot is taken at once")

		go func() {
			time.Sleep(time.Millisecond)
			<-h.slots
		}()
		require.True(t, h.takeDeliverySlot(ctx, &wait), "a slot freed during the wait is taken")
		time.Sleep(2 * time.Second) // the wait's timer expires, no one waiting

		start := time.Now()
		require.False(t, h.takeDeliverySlot(ctx, &wait), "no slot freed")
		require.Equal(t, time.Second, time.Since(start), "the wait lasted its length")

		<-h.slots
		start = time.Now()
		require.True(t, h.takeDeliverySlot(ctx, &wait))
		require.Zero(t, time.Since(start))
	})
}
