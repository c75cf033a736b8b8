package builtin

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time zones must resolve on hosts without a zoneinfo database

	"github.com/ncruces/go-strftime"

	"github.com/parleyhq/parley/internal/tools"
)

// Layouts and defaults of Dify's time tools.
const (
	defaultTimeFormat = "%Y-%m-%d %H:%M:%S %Z"
	localLayout       = "2006-01-02 15:04:05"
	// Dify's timestamp tools assume China Standard Time when no zone is given.
	defaultStampZone = "Asia/Shanghai"
	maxFormatLen     = 200
)

func timeSpecs(now func() time.Time) []spec {
	return []spec{
		{
			provider: "time", name: "current_time", label: "Current Time",
			description: "A tool for getting the current time.",
			parameters: schema(nil,
				[3]string{"format", "string", "strftime format of the time, e.g. %Y-%m-%d %H:%M:%S (default %Y-%m-%d %H:%M:%S %Z)"},
				[3]string{"timezone", "string", "IANA time zone, e.g. Asia/Shanghai (default UTC)"}),
			run: func(_ context.Context, a args) (string, error) {
				loc, err := zone(a.str("timezone"), "UTC")
				if err != nil {
					return "", err
				}
				format := a.str("format")
				if format == "" {
					format = defaultTimeFormat
				}
				if len(format) > maxFormatLen {
					return "", fmt.Errorf("%w: format is longer than %d characters", tools.ErrBadArguments, maxFormatLen)
				}
				return strftime.Format(format, now().In(loc)), nil
			},
		},
		{
			provider: "time", name: "weekday", label: "Weekday Calculator",
			description: "A tool for calculating the weekday of a given date.",
			parameters: schema([]string{"year", "month", "day"},
				[3]string{"year", "number", "year"},
				[3]string{"month", "number", "month, 1 to 12"},
				[3]string{"day", "number", "day of the month"}),
			run: func(_ context.Context, a args) (string, error) {
				var ymd [3]int64
				for i, n := range []string{"year", "month", "day"} {
					if _, err := a.required(n); err != nil {
						return "", err
					}
					v, err := a.integer(n, 0)
					if err != nil {
						return "", err
					}
					ymd[i] = v
				}
				y, m, d := ymd[0], ymd[1], ymd[2]
				if y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > 31 {
					return "", fmt.Errorf("%w: %d-%d-%d is not a valid date", tools.ErrBadArguments, y, m, d)
				}
				t := time.Date(int(y), time.Month(m), int(d), 0, 0, 0, 0, time.UTC)
				if t.Day() != int(d) {
					return "", fmt.Errorf("%w: %d-%d-%d is not a valid date", tools.ErrBadArguments, y, m, d)
				}
				return fmt.Sprintf("%s %d, %d is %s.", t.Month(), d, y, t.Weekday()), nil
			},
		},
		{
			provider: "time", name: "timezone_conversion", label: "Timezone Conversion",
			description: "Converts a time (YYYY-MM-DD HH:MM:SS) from one time zone to another.",
			parameters: schema([]string{"current_time", "current_timezone", "target_timezone"},
				[3]string{"current_time", "string", "the time to convert, YYYY-MM-DD HH:MM:SS"},
				[3]string{"current_timezone", "string", "IANA time zone of current_time"},
				[3]string{"target_timezone", "string", "IANA time zone to convert to"}),
			run: func(_ context.Context, a args) (string, error) {
				s, err := a.required("current_time")
				if err != nil {
					return "", err
				}
				from, err := requiredZone(a, "current_timezone")
				if err != nil {
					return "", err
				}
				to, err := requiredZone(a, "target_timezone")
				if err != nil {
					return "", err
				}
				t, err := time.ParseInLocation(localLayout, s, from)
				if err != nil {
					return "", fmt.Errorf("%w: current_time %q is not YYYY-MM-DD HH:MM:SS", tools.ErrBadArguments, s)
				}
				return t.In(to).Format(localLayout), nil
			},
		},
		{
			provider: "time", name: "localtime_to_timestamp", label: "Localtime to timestamp",
			description: "Converts a local time (YYYY-MM-DD HH:MM:SS) to a Unix timestamp in seconds.",
			parameters: schema([]string{"localtime"},
				[3]string{"localtime", "string", "the local time, YYYY-MM-DD HH:MM:SS"},
				[3]string{"timezone", "string", "IANA time zone of the local time (default Asia/Shanghai)"}),
			run: func(_ context.Context, a args) (string, error) {
				s, err := a.required("localtime")
				if err != nil {
					return "", err
				}
				loc, err := zone(a.str("timezone"), defaultStampZone)
				if err != nil {
					return "", err
				}
				t, err := time.ParseInLocation(localLayout, s, loc)
				if err != nil {
					return "", fmt.Errorf("%w: localtime %q is not YYYY-MM-DD HH:MM:SS", tools.ErrBadArguments, s)
				}
				return strconv.FormatInt(t.Unix(), 10), nil
			},
		},
		{
			provider: "time", name: "timestamp_to_localtime", label: "Timestamp to localtime",
			description: "Converts a Unix timestamp in seconds to local time (YYYY-MM-DD HH:MM:SS).",
			parameters: schema([]string{"timestamp"},
				[3]string{"timestamp", "integer", "Unix timestamp in seconds"},
				[3]string{"timezone", "string", "IANA time zone of the result (default Asia/Shanghai)"}),
			run: func(_ context.Context, a args) (string, error) {
				if _, err := a.required("timestamp"); err != nil {
					return "", err
				}
				ts, err := a.integer("timestamp", 0)
				if err != nil {
					return "", err
				}
				// Years 1 to 9999, as the result's layout has four digits.
				if ts < -62135596800 || ts > 253402300799 {
					return "", fmt.Errorf("%w: timestamp %d is out of range", tools.ErrBadArguments, ts)
				}
				loc, err := zone(a.str("timezone"), defaultStampZone)
				if err != nil {
					return "", err
				}
				return time.Unix(ts, 0).In(loc).Format(localLayout), nil
			},
		},
	}
}

// zone loads an IANA time zone, def when name is empty. "Local" is refused: the server's zone is
// not the user's.
func zone(name, def string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = def
	}
	if name == "Local" || len(name) > 64 {
		return nil, fmt.Errorf("%w: unknown time zone %q", tools.ErrBadArguments, name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%w: unknown time zone %q", tools.ErrBadArguments, name)
	}
	return loc, nil
}

func requiredZone(a args, name string) (*time.Location, error) {
	s, err := a.required(name)
	if err != nil {
		return nil, err
	}
	return zone(s, "")
}
