package dispatch

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/sundial-run/sundial/services/dispatcher/internal/least"
)

// Delivery slots. The handler's Concurrency slots bound the deliveries
// being worked on: waiting for a host's slot, connecting, sending, reading
// the answer. A delivery still in flight slowAfter after it took its slot
// is waiting on a slow receiver, which costs this process a goroutine and
// a connection but no work; once a hook is kept waiting for a slot, such a
// delivery moves to the slow room (slowFactor x Concurrency) and gives its
// slot to the hook. So a domain's slow or hanging paths (answers in
// seconds, timeouts) take the slow room, not the slots the fast paths'
// hooks need, and a burst of fast deliveries is bounded by Concurrency as
// before. The move is made by the waiting hook, as hostlimit parks a
// flow's slow deliveries: nothing runs while no hook waits.
//
// Slow is slow beside the handler's other deliveries: a delivery may move
// once it has held its slot slowAfter and slowMedians times the median of
// the recent answered exchanges (timeouts left out). When every delivery is slow (this machine
// out of CPU, or every receiver slow) the median rises with them and
// nothing moves, so the slow room never adds deliveries to a pool that
// cannot serve the ones it has.
//
// The slots open grow past Concurrency while the receivers, not this
// process, set how long a delivery takes: when hooks wait for a slot and
// the typical hold (the median of the recent answered exchanges) stays
// near its least, more deliveries at once finish as fast, so a burst to
// receivers answering in tens of milliseconds drains at the rate the
// processor allows instead of at Concurrency / their answer time. When
// the typical hold rises (this machine out of CPU, or receivers slowing
// under the load) the open slots shrink back towards Concurrency. Each
// slot grown is taken from the slow room, so the deliveries in flight
// stay under Concurrency + the slow room, as the memory they cost.
//
// The projects share the pool: a project holds at most its share in
// flight, slots and slow room together: the pool less a reserve
// (ProjectShare), divided among the projects with deliveries in flight or
// waiting, its own counted. A hook of a project at its share is not waited
// for but deferred (deferral.go). The reserve, which no project alone can
// take, is room for another project's first hooks: a slot, or a slow
// delivery to move out of one within slowAfter, whatever one project's
// receivers do; and as more projects deliver, the one holding the most
// gives way as its deliveries end.

const (
	// slowAfter is how long a delivery holds its slot before it may move
	// to the slow room: many times a healthy receiver's answer, and short
	// enough that the slots turn over at a few thousand deliveries a
	// second when some receivers take seconds.
	slowAfter = 250 * time.Millisecond
	// slowMedians is how many times the median answer a delivery holds its
	// slot before it may move.
	slowMedians = 4
	// slowFactor sizes the slow room, in multiples of Concurrency. A slow
	// delivery costs a goroutine and a connection; the room must hold what
	// a domain's hanging paths keep open at a few thousand hooks a second:
	// a path that answers after the delivery timeout holds each of its
	// hooks for that long, and again on their retries.
	slowFactor = 8
	// growFactor bounds the open slots, in multiples of Concurrency.
	growFactor = 2
	// The typical hold is near its least while at most holdTolerance
	// times it plus holdSlack (jitter of receivers answering in a
	// millisecond); above holdFar times that, the slots shrink. Growth
	// and shrinking are by an eighth of the open slots at each new
	// typical hold.
	holdTolerance = 2
	holdSlack     = 2 * time.Millisecond
	holdFar       = 1.5
	// minHoldWindow is how long a least typical hold is remembered (it is
	// the least of this window and the one before).
	minHoldWindow = 30 * time.Second
)

// slots are the handler's delivery slots and slow room. Guarded by mu:
// room, the open slots, and the list of deliveries holding a slot from
// first (the oldest) to last; the channel's buffer is the slots taken and
// those not open, so a hook waits for a slot on it.
type slots struct {
	taken chan struct{}
	floor int // Concurrency: the slots open at least
	// share is what the projects share (ProjectShare); 0: no bound per
	// project.
	share int

	mu          sync.Mutex
	room        int // left in the slow room
	first, last *deliverySlot
	// projects counts each project's deliveries holding a slot or room.
	projects map[uuid.UUID]int
	// holds are the last deliveries' holds, a ring; typical is their
	// median, computed again every len(holds)/4 frees.
	holds   [64]time.Duration
	freed   int
	typical time.Duration
	// open is the slots open now, floor to growFactor x floor; owed
	// counts slots closed while taken, whose token stays in the channel
	// when they free. waited says a hook waited for a slot since the last
	// typical hold; leastHold is the least typical hold of late.
	open, owed int
	// opened is told of every change of open (the slots.open metric).
	opened    func(int)
	waited    bool
	leastHold least.Window
}

func newSlots(concurrency int, opened func(int)) *slots {
	s := &slots{taken: make(chan struct{}, growFactor*concurrency), floor: concurrency, open: concurrency,
		opened: opened, leastHold: least.Window{Length: minHoldWindow}, share: ProjectShare(concurrency), room: SlowRoom(concurrency), projects: map[uuid.UUID]int{}}
	s.opened(concurrency)
	for range cap(s.taken) - concurrency {
		s.taken <- struct{}{} // the slots not open
	}
	return s
}

// ProjectShare is the most deliveries one project holds in flight in a
// handler of concurrency, alone: its slots and slow room less a reserve of
// a quarter of its slots (at least one) for the other projects.
func ProjectShare(concurrency int) int {
	return concurrency + SlowRoom(concurrency) - max(1, concurrency/4)
}

// enter counts a delivery of project in, before it takes a slot, unless
// the project holds its share of the pool or more (waiting deliveries
// counted, so that many at once cannot all pass); false then. A delivery
// that then takes no slot leaves again.
func (s *slots) enter(project uuid.UUID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.projects[project]
	active := len(s.projects)
	if !ok {
		active++
	}
	if s.share > 0 && n >= max(1, s.share/active) {
		return false
	}
	s.projects[project] = n + 1
	return true
}

// leave counts a delivery of project out: one that took no slot, or
// freed it.
func (s *slots) leave(project uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaveLocked(project)
}

func (s *slots) leaveLocked(project uuid.UUID) {
	if s.projects[project]--; s.projects[project] <= 0 {
		delete(s.projects, project)
	}
}

// deliverySlot is a delivery's hold on a slot, or once moved on the slow
// room. The delivery frees it once its exchange is over, before its result
// waits for its batch (reportResult): the wait is the result linger and a
// publish, and a slot held through it would cap the deliveries a second at
// Concurrency / (exchange + linger + publish) instead of Concurrency /
// exchange. free gives it back once, however often it is called, and does
// nothing on a nil slot (a deferral of a hook that found the pool busy
// holds none).
type deliverySlot struct {
	s       *slots
	project uuid.UUID
	taken   time.Time
	// Guarded by s.mu.
	moved, freed bool
	prev, next   *deliverySlot
}

// take takes a slot for a delivery of project, waiting up to wait's length
// for one to be freed or for a delivery to move to the slow room; nil when
// none came (or ctx ended). The caller has entered the delivery (enter),
// and leaves it when none came; freeing the slot leaves it. Each turn of its
// loop takes a slot, moves deliveries, or waits until the wait's end, the
// oldest delivery may move, or slowAfter, whichever is first: a bounded
// number of turns.
func (s *slots) take(ctx context.Context, wait *slotWait, project uuid.UUID) *deliverySlot {
	select {
	case s.taken <- struct{}{}:
		return s.hold(project)
	default:
	}
	end := time.Now().Add(wait.length)
	for {
		now := time.Now()
		left := end.Sub(now)
		// When none can move now (the room full, or the slots' holders
		// not yet listed), look again a slowAfter later.
		moveIn := s.moveSlow(now)
		if moveIn < 0 {
			moveIn = slowAfter
		}
		left = min(left, max(moveIn, time.Millisecond))
		if left <= 0 {
			return nil
		}
		select {
		case s.taken <- struct{}{}:
			return s.hold(project)
		case <-wait.start(left):
		case <-ctx.Done():
			return nil
		}
		if !time.Now().Before(end) {
			// One last try: a slot may have come free as the wait ended.
			select {
			case s.taken <- struct{}{}:
				return s.hold(project)
			default:
				return nil
			}
		}
	}
}

// hold registers a slot just taken, the newest.
func (s *slots) hold(project uuid.UUID) *deliverySlot {
	d := &deliverySlot{s: s, project: project, taken: time.Now()}
	s.mu.Lock()
	d.prev = s.last
	if s.last != nil {
		s.last.next = d
	} else {
		s.first = d
	}
	s.last = d
	s.mu.Unlock()
	return d
}

// slowIn is how long a delivery holds its slot before it may move; s.mu is
// held.
func (s *slots) slowIn() time.Duration {
	return max(slowAfter, slowMedians*s.typical)
}

// observe counts a delivery's exchange that ended with an answer in the
// typical hold: timeouts are the slow paths the slow room is for, not a
// sign that every delivery is slow. Nothing on a nil slot.
func (d *deliverySlot) observe(took time.Duration) {
	if d == nil {
		return
	}
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	d.s.recordHold(took)
}

// recordHold counts an exchange's time in the typical hold; s.mu is held.
func (s *slots) recordHold(d time.Duration) {
	s.holds[s.freed%len(s.holds)] = d
	s.freed++
	if s.freed%(len(s.holds)/4) != 0 {
		return
	}
	recent := s.holds[:min(s.freed, len(s.holds))]
	sorted := slices.Clone(recent)
	slices.Sort(sorted)
	s.typical = sorted[len(sorted)/2]
	s.adapt(time.Now())
}

// adapt opens or closes slots after a new typical hold; s.mu is held.
// A handler built without newSlots (floor 0) keeps its slots as they are.
func (s *slots) adapt(now time.Time) {
	if s.floor == 0 {
		return
	}
	s.leastHold.Note(s.typical, now)
	near := time.Duration(float64(s.leastHold.Least())*holdTolerance) + holdSlack
	step := max(1, s.open/8)
	was := s.open
	defer func() {
		if s.open != was {
			s.opened(s.open - was)
		}
	}()
	switch {
	case s.waited && s.typical <= near:
		for range step {
			if s.open >= growFactor*s.floor || s.room <= 0 {
				break
			}
			s.open++
			s.room--
			if s.owed > 0 {
				s.owed--
			} else {
				<-s.taken // a slot not open: never blocks
			}
		}
	case s.typical > time.Duration(float64(near)*holdFar):
		for range step {
			if s.open <= s.floor {
				break
			}
			s.open--
			s.room++
			select {
			case s.taken <- struct{}{}:
			default:
				s.owed++ // every slot taken: closed as one frees
			}
		}
	}
	s.waited = false
}

// release gives a slot back: to the waiting hooks, or, when slots were
// closed while taken, to the slots not open; s.mu is held.
func (s *slots) release() {
	if s.owed > 0 {
		s.owed--
		return
	}
	<-s.taken
}

// moveSlow moves the deliveries that have held their slot for slowIn,
// oldest first, to the slow room while it has space, freeing their slots.
// It returns how long until the oldest left may move, -1 when none can
// (no delivery holds a slot, or the room is full).
func (s *slots) moveSlow(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waited = true
	for s.first != nil && s.room > 0 {
		d := s.first
		if in := d.taken.Add(s.slowIn()).Sub(now); in > 0 {
			return in
		}
		s.unlink(d)
		d.moved = true
		s.room--
		s.release()
	}
	return -1
}

// unlink takes d off the list of slots held; s.mu is held.
func (s *slots) unlink(d *deliverySlot) {
	if d.prev != nil {
		d.prev.next = d.next
	} else {
		s.first = d.next
	}
	if d.next != nil {
		d.next.prev = d.prev
	} else {
		s.last = d.prev
	}
	d.prev, d.next = nil, nil
}

func (d *deliverySlot) free() {
	if d == nil {
		return
	}
	s := d.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.freed {
		return
	}
	switch {
	case d.moved:
		s.room++
	default:
		s.unlink(d)
		s.release()
	}
	d.freed = true
	s.leaveLocked(d.project)
}

// slotWait times a message's waits for delivery slots, one after another,
// on one timer: made at the first wait, reset for each after it. In a
// burst every hook waits for a slot, and a timer made and stopped for each
// wait was a visible share of the dispatcher's CPU. One goroutine owns it.
type slotWait struct {
	length time.Duration
	timer  *time.Timer
}

// start starts a wait of d and returns the channel its end is sent on.
// Since Go 1.23 a timer's channel holds no expiry from before a Reset, so
// an earlier wait that ended with a slot cannot end this one early.
func (w *slotWait) start(d time.Duration) <-chan time.Time {
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	return w.timer.C
}

// stop releases the timer, if a wait made one.
func (w *slotWait) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}
