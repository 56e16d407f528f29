package sundial_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"

	sundial "github.com/sundial-run/sundial/sdk"
)

// Schedule a hook at a UTC instant, at a wall-clock time in a time zone,
// and after a delay.
func ExampleHookService_Schedule() {
	ctx := context.Background()
	client := sundial.NewClient(os.Getenv("SUNDIAL_API_KEY"), sundial.WithBaseURL("https://sundial.example.com"))

	// At an instant (any offset; stored in UTC).
	h, err := client.Hooks.Schedule(ctx, sundial.ScheduleHookRequest{
		Path:   "/webhooks/invoice",
		Data:   map[string]any{"invoice": 1042},
		PostAt: time.Date(2030, 12, 1, 8, 0, 0, 0, time.UTC),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(h.ID, h.PostAt)

	// At 09:00 in Paris, whatever the DST rules of that day.
	_, err = client.Hooks.Schedule(ctx, sundial.ScheduleHookRequest{
		Path:        "/reminders",
		Data:        map[string]any{"user": 42},
		PostAtLocal: sundial.LocalTime(time.Date(2030, 12, 1, 9, 0, 0, 0, time.UTC)),
		Timezone:    "Europe/Paris",
	})
	if err != nil {
		log.Fatal(err)
	}

	// In an hour and a half, with its own retry settings and a key that
	// makes repeating this very call safe.
	_, err = client.Hooks.Schedule(ctx, sundial.ScheduleHookRequest{
		Path:           "/webhooks/trial-ending",
		Data:           map[string]any{"account": "acme"},
		PostIn:         sundial.Delay(90 * time.Minute),
		RetryOverride:  &sundial.RetryOverride{MinRetries: 3, DelaySecs: 10, Strategy: sundial.StrategyExponential, MaxDelaySecs: 120},
		IdempotencyKey: "trial-ending-acme",
	})
	var apiErr *sundial.APIError
	if errors.As(err, &apiErr) {
		// A 400 names the fields at fault.
		log.Fatalf("refused: %s (fields %v)", apiErr.Message, apiErr.Fields())
	}
}

// Walk every failed hook, page after page.
func ExampleHookService_All() {
	ctx := context.Background()
	client := sundial.NewClient(os.Getenv("SUNDIAL_API_KEY"))

	var ids []string
	for h, err := range client.Hooks.All(ctx, sundial.ListHooksParams{Status: sundial.StatusFailed, Limit: 500}) {
		if err != nil {
			log.Fatal(err)
		}
		ids = append(ids, h.ID)
	}
	// Then retry them all, 1000 at a time at most.
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		if _, err := client.Hooks.BulkRetry(ctx, sundial.BulkActionRequest{HookIDs: ids[:n]}); err != nil {
			log.Fatal(err)
		}
		ids = ids[n:]
	}
}

// Receive deliveries: the handler checks the signature (401 when it does
// not match) and answers what the function decides.
func ExampleNewHandler() {
	// The keys of GET /v1/signing-keys: the active one, and during a
	// rotation the retiring one. Their standardSecret (whsec_...) works too.
	keys := []string{os.Getenv("SUNDIAL_SIGNING_KEY")}

	http.Handle("/webhooks/", sundial.NewHandler(keys, func(ctx context.Context, d *sundial.Delivery) sundial.Result {
		// Deliveries are at least once: d.ID is the same on every attempt.
		if err := processOnce(ctx, d.ID, d.Data); err != nil {
			return sundial.Nack(err) // 500: Sundial retries the hook
		}
		return sundial.Ack() // 200: the hook is completed
	}))
	log.Fatal(http.ListenAndServe(":8000", nil))
}

// Answer 202 now and ack when the work is done: the hook stays pending
// until then (or until the timeout, a failed attempt).
func ExampleAsyncService_Ack() {
	client := sundial.NewClient("") // the ack URL is its own credential
	keys := []string{os.Getenv("SUNDIAL_SIGNING_KEY")}

	handler := sundial.NewHandler(keys, func(_ context.Context, d *sundial.Delivery) sundial.Result {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			if err := longJob(ctx, d.Data); err != nil {
				_, _ = client.Async.Nack(ctx, d.NackURL, err.Error())
				return
			}
			if _, err := client.Async.Ack(ctx, d.AckURL, map[string]any{"done": true}); err != nil {
				log.Print(err)
			}
		}()
		return sundial.Accept(10 * time.Minute) // 202 + Sundial-Async-Timeout: 600
	})
	log.Fatal(http.ListenAndServe(":8000", handler))
}

// Check a delivery without the handler, in a framework of your own.
func ExampleParseDelivery() {
	keys := []string{os.Getenv("SUNDIAL_SIGNING_KEY")}
	http.HandleFunc("/webhooks/orders", func(w http.ResponseWriter, r *http.Request) {
		d, err := sundial.ParseDelivery(r, keys)
		if err != nil {
			http.Error(w, "invalid delivery", http.StatusUnauthorized)
			return
		}
		fmt.Println("hook", d.ID, "due at", d.PostAt)
		w.WriteHeader(http.StatusOK)
	})
}

func processOnce(context.Context, string, []byte) error { return nil }

func longJob(context.Context, []byte) error { return nil }

// Take the project's deliveries on this machine, without a public address,
// until the program is interrupted.
func ExampleClient_Listen() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	client := sundial.NewClient(os.Getenv("SUNDIAL_API_KEY"), sundial.WithBaseURL("https://sundial.example.com"))

	err := client.Listen(ctx, func(ctx context.Context, d *sundial.ListenDelivery) sundial.Result {
		if err := processOnce(ctx, d.ID, d.Data); err != nil {
			return sundial.Nack(err) // retried with the hook's retry settings
		}
		return sundial.Ack()
	}, sundial.WithListenObserver(func(e sundial.ListenEvent) {
		switch e.Type {
		case sundial.ListenConnected:
			log.Printf("listening for %s", e.Connection.ProjectName)
		case sundial.ListenDisconnected:
			log.Printf("disconnected (%v); again in %s", e.Err, e.Retry)
		}
	}))
	switch {
	case errors.Is(err, context.Canceled):
		// Interrupted: a clean stop.
	case errors.Is(err, sundial.ErrAccessRevoked):
		log.Fatal("the API key was revoked: use another one")
	case err != nil:
		log.Fatal(err)
	}
}

// Create a sequence that runs on weekdays at 09:00 in Paris (whatever the
// daylight-saving rules of the day), with three steps in a chain: extract,
// then transform once extract has completed, then load.
func ExampleSequenceService_Create() {
	ctx := context.Background()
	client := sundial.NewClient(os.Getenv("SUNDIAL_API_KEY"), sundial.WithBaseURL("https://sundial.example.com"))

	seq, err := client.Sequences.Create(ctx, sundial.SequenceRequest{
		Name: "nightly-etl",
		Schedule: sundial.SequenceSchedule{
			Frequency:  sundial.FrequencyWeekly,
			Timezone:   "Europe/Paris",
			Time:       sundial.At(9, 0),
			DaysOfWeek: []string{"mon", "tue", "wed", "thu", "fri"},
		},
		Steps: []sundial.SequenceStep{
			{Name: "extract", Path: "/etl/extract", Data: map[string]any{"source": "orders"}},
			{Name: "transform", Path: "/etl/transform", Data: map[string]any{}, DependsOn: []string{"extract"}},
			{Name: "load", Path: "/etl/load", Data: map[string]any{"table": "orders"}, DependsOn: []string{"transform"},
				RetryOverride: &sundial.RetryOverride{MinRetries: 3, DelaySecs: 30, Strategy: sundial.StrategyFixed}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(seq.ID, seq.Status, seq.NextRunAt)

	// Its runs, newest first, with each step's status and hook.
	for run, err := range client.Sequences.AllRuns(ctx, seq.ID, sundial.ListSequencesParams{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(run.Slot, run.Status, len(run.Steps))
	}
}

// Preview a schedule before saving it: the next five run times of "daily
// at 02:30 in New York" from 8 March 2030, which shows the spring-forward
// day (10 March) running at 03:00 local, the end of the gap.
func ExampleSequenceService_PreviewSchedule() {
	ctx := context.Background()
	client := sundial.NewClient(os.Getenv("SUNDIAL_API_KEY"), sundial.WithBaseURL("https://sundial.example.com"))

	times, err := client.Sequences.PreviewSchedule(ctx, sundial.SchedulePreviewRequest{
		Schedule: sundial.SequenceSchedule{Frequency: sundial.FrequencyDaily, Timezone: "America/New_York", Time: sundial.At(2, 30)},
		StartAt:  time.Date(2030, 3, 8, 0, 0, 0, 0, time.UTC),
		Count:    5,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range times {
		fmt.Println(t.Format(time.RFC3339))
	}
}
