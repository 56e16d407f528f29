package calendar_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/pkg/calendar"
)

func TestDescribeSaysTheScheduleInWords(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`{"every": "15m"}`: "Every 15m",
		`{"every": "1d"}`:  "Every 1d",
		`{"frequency": "hourly", "timezone": "UTC", "time": {"minute": 30}}`:                                                                            "Every hour at :30, UTC",
		`{"frequency": "daily", "timezone": "Europe/Paris", "time": {"hour": 9, "minute": 0}}`:                                                          "Daily at 09:00, Europe/Paris",
		`{"frequency": "weekly", "timezone": "Europe/Paris", "time": {"hour": 9, "minute": 0}, "daysOfWeek": ["mon", "tue", "wed", "thu", "fri"]}`:      "Weekdays at 09:00, Europe/Paris",
		`{"frequency": "weekly", "timezone": "UTC", "time": {"hour": 10, "minute": 5}, "daysOfWeek": ["sun", "sat"]}`:                                   "Weekends at 10:05, UTC",
		`{"frequency": "weekly", "timezone": "UTC", "time": {"hour": 18, "minute": 30}, "daysOfWeek": ["thu", "mon"]}`:                                  "Mondays and Thursdays at 18:30, UTC",
		`{"frequency": "weekly", "timezone": "UTC", "time": {"hour": 7, "minute": 0}, "daysOfWeek": ["sun", "wed", "fri"]}`:                             "Wednesdays, Fridays and Sundays at 07:00, UTC",
		`{"frequency": "weekly", "timezone": "UTC", "time": {"hour": 7, "minute": 0}, "daysOfWeek": ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]}`: "Every day at 07:00, UTC",
		`{"frequency": "monthly", "timezone": "Asia/Tokyo", "time": {"hour": 6, "minute": 0}, "daysOfMonth": [15, 1, -1]}`:                              "Monthly on the 1st, 15th and last day at 06:00, Asia/Tokyo",
		`{"frequency": "monthly", "timezone": "UTC", "time": {"hour": 0, "minute": 0}, "daysOfMonth": [2, 3, 11, 12, 13, 21, 22, 23]}`:                  "Monthly on the 2nd, 3rd, 11th, 12th, 13th, 21st, 22nd and 23rd day at 00:00, UTC",
	}
	for raw, want := range cases {
		var spec calendar.Spec
		require.NoError(t, json.Unmarshal([]byte(raw), &spec), raw)
		s, err := calendar.New(spec)
		require.NoError(t, err, raw)
		require.Equal(t, want, s.Describe(), raw)
	}
}
