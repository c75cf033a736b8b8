package triggers

import (
	"strings"
	"testing"
	"time"
)

func TestVisualToCron(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		freq string
		vc   map[string]any
		want string
	}{
		{"hourly", map[string]any{"on_minute": int64(15)}, "15 * * * *"},
		{"hourly", nil, "0 * * * *"},
		{"daily", map[string]any{"time": "12:00 AM"}, "0 0 * * *"},
		{"daily", map[string]any{"time": "12:00 PM"}, "0 12 * * *"},
		{"daily", map[string]any{"time": "2:30 PM"}, "30 14 * * *"},
		{"daily", nil, "0 0 * * *"},
		// Dify sorts the days by their number.
		{"weekly", map[string]any{"time": "9:05 AM", "weekdays": []any{"fri", "mon", "sun"}}, "5 9 * * 0,1,5"},
		{"monthly", map[string]any{"time": "11:59 PM", "monthly_days": []any{int64(15), "last", int64(1), int64(15)}}, "59 23 1,15,L * *"},
		{"monthly", map[string]any{"time": "1:00 AM", "monthly_days": []any{"last"}}, "0 1 L * *"},
	} {
		got, err := VisualToCron(tc.freq, tc.vc)
		if err != nil || got != tc.want {
			t.Errorf("%s %v: %q, %v; want %q", tc.freq, tc.vc, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		freq string
		vc   map[string]any
		want string
	}{
		{"", nil, "frequency: required"},
		{"yearly", nil, `frequency: "yearly"`},
		{"hourly", map[string]any{"on_minute": int64(60)}, "visual_config.on_minute"},
		{"daily", map[string]any{"time": "25:00"}, "visual_config.time"},
		{"daily", map[string]any{"time": "13:00 PM"}, "the hour is from 1 to 12"},
		{"weekly", map[string]any{"time": "9:00 AM"}, "visual_config.weekdays"},
		{"weekly", map[string]any{"time": "9:00 AM", "weekdays": []any{"someday"}}, "someday"},
		{"monthly", map[string]any{"time": "9:00 AM", "monthly_days": []any{int64(32)}}, "visual_config.monthly_days"},
	} {
		if _, err := VisualToCron(tc.freq, tc.vc); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want an error with %q", tc.freq, tc.vc, err, tc.want)
		}
	}
}

func mustSchedule(t *testing.T, expr, tz string) *Schedule {
	t.Helper()
	s, err := NewSchedule("n", expr, tz)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestScheduleNext(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		expr, tz, from, want string
	}{
		// Five fields; the time zone decides the wall clock.
		{"0 9 * * *", "UTC", "2025-03-01T08:00:00Z", "2025-03-01T09:00:00Z"},
		{"0 9 * * *", "Asia/Tokyo", "2025-03-01T08:00:00Z", "2025-03-02T00:00:00Z"},
		// Six fields: seconds first.
		{"* * * * * *", "UTC", "2025-03-01T08:00:00.300Z", "2025-03-01T08:00:01Z"},
		{"*/10 * * * * *", "UTC", "2025-03-01T08:00:01Z", "2025-03-01T08:00:10Z"},
		// Descriptors.
		{"@daily", "UTC", "2025-03-01T08:00:00Z", "2025-03-02T00:00:00Z"},
		// The last day of the month, alone and with other days.
		{"0 0 L * *", "UTC", "2025-02-10T00:00:00Z", "2025-02-28T00:00:00Z"},
		{"0 0 L * *", "UTC", "2024-02-10T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"0 0 15,L * *", "UTC", "2025-04-16T00:00:00Z", "2025-04-30T00:00:00Z"},
		{"0 0 15,L * *", "UTC", "2025-04-01T00:00:00Z", "2025-04-15T00:00:00Z"},
		// Sunday as 7, alone and closing a range.
		{"0 0 * * 7", "UTC", "2025-03-03T00:00:00Z", "2025-03-09T00:00:00Z"},
		{"0 0 * * 6-7", "UTC", "2025-03-03T00:00:00Z", "2025-03-08T00:00:00Z"},
		// "?" for any.
		{"0 12 ? * MON", "UTC", "2025-03-01T00:00:00Z", "2025-03-03T12:00:00Z"},
	} {
		got := mustSchedule(t, tc.expr, tc.tz).Next(at(tc.from))
		if !got.Equal(at(tc.want)) {
			t.Errorf("%s in %s after %s: %s, want %s", tc.expr, tc.tz, tc.from, got.Format(time.RFC3339), tc.want)
		}
	}
	// Never again: the zero time.
	if n := mustSchedule(t, "0 0 30 2 *", "UTC").Next(at("2025-01-01T00:00:00Z")); !n.IsZero() {
		t.Errorf("February 30th ticks at %s", n)
	}
}

func TestNewScheduleRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, tz, want string }{
		{"0 9 * *", "UTC", "4 fields"},
		{"0 0 9 * * * *", "UTC", "7 fields"},
		{"@every 5s", "UTC", "@every"},
		{"61 * * * *", "UTC", "cron expression"},
		{"0 9 * * *", "Mars/Olympus", "timezone"},
		{"0 9 * * *", "Local", "timezone"},
	} {
		if _, err := NewSchedule("n", tc.expr, tc.tz); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q in %q: %v, want an error with %q", tc.expr, tc.tz, err, tc.want)
		}
	}
}

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	// Dify's defaults: visual mode, UTC.
	s, err := ParseSchedule("n", map[string]any{"frequency": "daily", "visual_config": map[string]any{"time": "7:15 AM"}})
	if err != nil || s.Cron != "15 7 * * *" || s.Timezone != "UTC" {
		t.Fatalf("visual: %+v %v", s, err)
	}
	// Cron mode reads cron_expression, whatever the editor left under config.
	s, err = ParseSchedule("n", map[string]any{"mode": "cron", "cron_expression": "0 9 * * *", "timezone": "Asia/Shanghai",
		"config": map[string]any{"mode": "visual", "frequency": "daily"}})
	if err != nil || s.Cron != "0 9 * * *" || s.Timezone != "Asia/Shanghai" {
		t.Fatalf("cron: %+v %v", s, err)
	}
	for _, tc := range []struct {
		data map[string]any
		want string
	}{
		{map[string]any{"mode": "cron"}, "cron_expression: required"},
		{map[string]any{"mode": "sometimes"}, `mode: "sometimes"`},
		{map[string]any{"mode": "visual"}, "frequency: required"},
	} {
		if _, err := ParseSchedule("n", tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.data, err, tc.want)
		}
	}
}

func TestTo24h(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]int{"12:00 AM": {0, 0}, "12:00 PM": {12, 0}, "1:30 PM": {13, 30}, "11:59 pm": {23, 59}, "9:05 AM": {9, 5}} {
		h, m, err := To24h(in)
		if err != nil || h != want[0] || m != want[1] {
			t.Errorf("%q: %d:%d %v, want %v", in, h, m, err, want)
		}
	}
	for _, in := range []string{"", "9:00", "0:30 AM", "9:60 AM", "nine AM", "9:00 XM"} {
		if _, _, err := To24h(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
