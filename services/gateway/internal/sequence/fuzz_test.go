package sequence

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// createSeeds are bodies of POST /v1/sequences, good and bad; go test runs
// them as FuzzCreateSequence's seeds.
var createSeeds = []string{
	`{"name":"nightly-etl","schedule":{"frequency":"weekly","timezone":"Europe/Paris","time":{"hour":9,"minute":0},"daysOfWeek":["mon","tue","wed","thu","fri"]},
	  "steps":[{"name":"extract","path":"/etl/extract","data":{"source":"orders"}},
	           {"name":"transform","path":"/etl/transform","data":{},"dependsOn":["extract"]},
	           {"name":"load","path":"/etl/load","data":{},"dependsOn":["transform"],"retryOverride":{"minRetries":3,"delaySecs":30,"strategy":"fixed"}}]}`,
	`{"name":"e","schedule":{"every":"15m"},"startAt":"2030-01-01T00:00:00Z","endAt":"2031-01-01T00:00:00+01:00","catchUp":"all","overlap":"skip","steps":[{"name":"s","path":"/s?a=1","data":{}}]}`,
	`{"name":"m","schedule":{"frequency":"monthly","timezone":"America/Santiago","time":{"hour":0,"minute":0},"daysOfMonth":[31,-1,1]},"steps":[{"name":"s","path":"/s","data":{}}]}`,
	`{"name":"h","schedule":{"frequency":"hourly","timezone":"Pacific/Apia","time":{"minute":30}},"steps":[{"name":"s","path":"/s","data":{}}]}`,
	`{"name":"c","schedule":{"every":"1h"},"steps":[{"name":"a","path":"/a","data":{},"dependsOn":["c"]},{"name":"b","path":"/b","data":{},"dependsOn":["a"]},{"name":"c","path":"/c","data":{},"dependsOn":["b"]}]}`,
	`{"name":"u","schedule":{"every":"1h"},"steps":[{"name":"a","path":"/a","data":{},"dependsOn":["lod","a","a"]}]}`,
	`{"name":"BAD","schedule":{"frequency":"daily","timezone":"Local","time":{"hour":99}},"steps":[{"name":"a","path":"//evil/../x","data":[1]}],"catchUp":"x"}`,
	`{"name":"x","schedule":{"every":"1h","Every":"2h"},"steps":[]}`,
	`{"name":"x","schedule":null,"steps":null,"startAt":"yesterday","endAt":""}`,
	`{"name":"x","schedule":{"every":"1h"},"steps":[{"name":"s","path":"/s","data":{"a":"` + strings.Repeat("x", 70000) + `"}}]}`,
	`{}`, `[]`, `{"name":1}`, `{"steps":[{}]}`, `{"name":"a"} trailing`, "{\"name\":\"\xff\"}",
}

// FuzzCreateSequence checks the whole create request's decoding and
// validation: any body is decoded or refused naming what is wrong, and a
// decoded one is a definition or field-named problems; nothing panics, and
// nothing is an error the API would answer with a 5xx.
func FuzzCreateSequence(f *testing.F) {
	for _, s := range createSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var r Request
		if err := strictjson.Decode(body, &r); err != nil {
			var de *strictjson.Error
			require.True(t, errors.As(err, &de), "a decoding failure is a *strictjson.Error (a 400): %v", err)
			return
		}
		d, err := r.Validate()
		var (
			bad      *InvalidError
			tooLarge *TooLargeError
		)
		switch {
		case err == nil:
			checkDefinition(t, d)
		case errors.As(err, &tooLarge):
			require.True(t, strings.HasPrefix(tooLarge.Field, "steps["), tooLarge.Field)
		case errors.As(err, &bad):
			require.NotEmpty(t, bad.Problems)
			for _, p := range bad.Problems {
				require.NotEmpty(t, p.Field, "every 400 names a field")
				require.NotEmpty(t, p.Message)
			}
		default:
			t.Fatalf("an error the API would answer with a 500: %v", err)
		}
	})
}

// checkDefinition checks what a valid definition promises the store and
// the scheduler.
func checkDefinition(t *testing.T, d Definition) {
	t.Helper()
	require.Regexp(t, namePattern, d.Name)
	require.NotEmpty(t, d.Steps)
	require.LessOrEqual(t, len(d.Steps), MaxSteps)
	_, _, err := encode(d)
	require.NoError(t, err)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	startAt := now
	if d.StartAt != nil {
		startAt = *d.StartAt
	}
	status, next := plan(d.Schedule, startAt, d.EndAt, now, false)
	switch status {
	case StatusActive:
		require.NotNil(t, next)
		require.False(t, next.Before(now))
		require.False(t, next.Before(startAt))
	case StatusEnded:
		require.Nil(t, next)
	default:
		t.Fatalf("planned %s", status)
	}
}
