package sequence

import (
	"testing"
	"time"

	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// BenchmarkPreview is POST /v1/sequences/preview's work without HTTP: a
// strict decode, validation and 100 slots, for the costliest shapes (a
// monthly last day and an hourly schedule in DST zones). It must stay far
// below the 5 ms the preview's p99 is allowed.
func BenchmarkPreview(b *testing.B) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ name, body string }{
		{"monthly", `{"schedule":{"frequency":"monthly","timezone":"America/Santiago","time":{"hour":0,"minute":0},"daysOfMonth":[31,-1,29]},"count":100}`},
		{"hourly", `{"schedule":{"frequency":"hourly","timezone":"Australia/Lord_Howe","time":{"minute":15}},"count":100}`},
		{"weekly", `{"schedule":{"frequency":"weekly","timezone":"Europe/Paris","time":{"hour":9,"minute":0},"daysOfWeek":["mon","tue","wed","thu","fri"]},"count":10}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				var r PreviewRequest
				if err := strictjson.Decode([]byte(tc.body), &r); err != nil {
					b.Fatal(err)
				}
				times, err := r.RunTimes(now)
				if err != nil || len(times) == 0 {
					b.Fatal(err, times)
				}
			}
		})
	}
}
