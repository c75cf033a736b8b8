package triggers

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a trigger-schedule node's schedule: its cron expression (a visual schedule is
// turned into one, as Dify's ScheduleService.visual_to_cron does) in its time zone.
type Schedule struct {
	NodeID string
	// Cron is the effective cron expression; Timezone an IANA name (default UTC).
	Cron, Timezone string
	loc            *time.Location
	sched          cron.Schedule
}

// ParseSchedule reads a trigger-schedule node's data: mode cron (cron_expression) or visual
// (frequency hourly, daily, weekly or monthly, with visual_config), and timezone. Its error
// names the field at fault.
func ParseSchedule(nodeID string, data map[string]any) (*Schedule, error) {
	str := func(k string) string { v, _ := data[k].(string); return strings.TrimSpace(v) }
	mode := str("mode")
	if mode == "" {
		mode = "visual"
	}
	tz := str("timezone")
	if tz == "" {
		tz = "UTC"
	}
	var expr string
	switch mode {
	case "cron":
		if expr = str("cron_expression"); expr == "" {
			return nil, errors.New("cron_expression: required in cron mode")
		}
	case "visual":
		vc, _ := data["visual_config"].(map[string]any)
		var err error
		if expr, err = VisualToCron(str("frequency"), vc); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("mode: %q is neither cron nor visual", mode)
	}
	return NewSchedule(nodeID, expr, tz)
}

// NewSchedule parses a cron expression in time zone tz. Besides Dify's five fields (minute,
// hour, day of month, month, day of week) and its predefined @yearly, @monthly, @weekly, @daily
// and @hourly, a sixth field in front counts seconds (a Parley extension, for schedules that
// tick faster than a minute); "?" stands for "*", "L" as a day of the month is its last day, and
// 7 is Sunday too, as croniter reads them.
func NewSchedule(nodeID, expr, tz string) (*Schedule, error) {
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return nil, fmt.Errorf("timezone: %q is not an IANA time zone name (such as UTC or Europe/Paris)", tz)
	}
	sched, err := parseCron(expr)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %w", expr, err)
	}
	return &Schedule{NodeID: nodeID, Cron: expr, Timezone: tz, loc: loc, sched: sched}, nil
}

// Next is the schedule's first tick after t (the zero time when it never ticks again), in UTC.
func (s *Schedule) Next(t time.Time) time.Time {
	n := s.sched.Next(t.In(s.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// In is t in the schedule's time zone.
func (s *Schedule) In(t time.Time) time.Time { return t.In(s.loc) }

// cronParser reads five fields, or six with seconds first, and the descriptors.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

var sundayRange = regexp.MustCompile(`^([0-6])-7$`)

func parseCron(expr string) (cron.Schedule, error) {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "@") {
		if strings.HasPrefix(expr, "@every") {
			return nil, errors.New("@every is not a cron schedule; write the fields (Dify accepts @yearly, @monthly, @weekly, @daily and @hourly)")
		}
		return cronParser.Parse(expr)
	}
	fields := strings.Fields(expr)
	if len(fields) != 5 && len(fields) != 6 {
		return nil, fmt.Errorf("%d fields; a cron expression has 5 (minute hour day-of-month month day-of-week), or 6 with seconds first", len(fields))
	}
	dom, dow := len(fields)-3, len(fields)-1
	// Sunday as 7, as croniter reads it.
	var days []string
	for _, d := range strings.Split(fields[dow], ",") {
		switch {
		case d == "7":
			d = "0"
		case sundayRange.MatchString(d):
			d = d[:1] + "-6,0"
		}
		days = append(days, d)
	}
	fields[dow] = strings.Join(days, ",")
	// "L", the last day of the month, as Dify's monthly schedules write it.
	var numeric []string
	last := false
	for _, d := range strings.Split(fields[dom], ",") {
		if strings.EqualFold(d, "L") {
			last = true
			continue
		}
		numeric = append(numeric, d)
	}
	if !last {
		return cronParser.Parse(strings.Join(fields, " "))
	}
	var parts []cron.Schedule
	if len(numeric) > 0 {
		f := slices.Clone(fields)
		f[dom] = strings.Join(numeric, ",")
		s, err := cronParser.Parse(strings.Join(f, " "))
		if err != nil {
			return nil, err
		}
		parts = append(parts, s)
	}
	f := slices.Clone(fields)
	f[dom] = "28-31"
	s, err := cronParser.Parse(strings.Join(f, " "))
	if err != nil {
		return nil, err
	}
	return anyOf(append(parts, lastDay{s})), nil
}

// lastDay ticks when its schedule does on the last day of a month.
type lastDay struct{ s cron.Schedule }

func (l lastDay) Next(t time.Time) time.Time {
	for i := 0; i < 1000; i++ {
		t = l.s.Next(t)
		if t.IsZero() || t.AddDate(0, 0, 1).Month() != t.Month() {
			return t
		}
	}
	return time.Time{}
}

// anyOf ticks when any of its schedules does.
type anyOf []cron.Schedule

func (a anyOf) Next(t time.Time) time.Time {
	var first time.Time
	for _, s := range a {
		if n := s.Next(t); !n.IsZero() && (first.IsZero() || n.Before(first)) {
			first = n
		}
	}
	return first
}

// weekdays are Dify's visual weekday names, by cron number.
var weekdays = map[string]string{"sun": "0", "mon": "1", "tue": "2", "wed": "3", "thu": "4", "fri": "5", "sat": "6"}

// VisualToCron turns Dify's visual schedule into its cron expression, as Dify's
// ScheduleService.visual_to_cron does: hourly on on_minute; daily, weekly (weekdays) and
// monthly (monthly_days, numbers or "last") at time, a 12-hour "h:mm AM" time.
func VisualToCron(frequency string, vc map[string]any) (string, error) {
	get := func(k string) (any, bool) { v, ok := vc[k]; return v, ok && v != nil }
	at := func() (int, int, error) {
		t := "12:00 AM"
		if v, ok := get("time"); ok {
			s, isStr := v.(string)
			if !isStr {
				return 0, 0, fmt.Errorf("visual_config.time: a text such as \"2:30 PM\", not %T", v)
			}
			t = s
		}
		h, m, err := To24h(t)
		if err != nil {
			return 0, 0, fmt.Errorf("visual_config.time: %w", err)
		}
		return h, m, nil
	}
	switch frequency {
	case "hourly":
		minute := 0
		if v, ok := get("on_minute"); ok {
			n, ok := intOf(v)
			if !ok || n < 0 || n > 59 {
				return "", fmt.Errorf("visual_config.on_minute: %v is not a minute from 0 to 59", v)
			}
			minute = n
		}
		return fmt.Sprintf("%d * * * *", minute), nil
	case "daily":
		h, m, err := at()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d %d * * *", m, h), nil
	case "weekly":
		h, m, err := at()
		if err != nil {
			return "", err
		}
		v, _ := get("weekdays")
		l, _ := v.([]any)
		if len(l) == 0 {
			return "", errors.New("visual_config.weekdays: a weekly schedule needs its days (sun, mon, tue, wed, thu, fri, sat)")
		}
		var days []string
		for _, d := range l {
			s, _ := d.(string)
			n, ok := weekdays[s]
			if !ok {
				return "", fmt.Errorf("visual_config.weekdays: %v is not one of sun, mon, tue, wed, thu, fri, sat", d)
			}
			if !slices.Contains(days, n) {
				days = append(days, n)
			}
		}
		sort.Strings(days)
		return fmt.Sprintf("%d %d * * %s", m, h, strings.Join(days, ",")), nil
	case "monthly":
		h, m, err := at()
		if err != nil {
			return "", err
		}
		v, _ := get("monthly_days")
		l, _ := v.([]any)
		if len(l) == 0 {
			return "", errors.New("visual_config.monthly_days: a monthly schedule needs its days (1 to 31, or last)")
		}
		var nums []int
		last := false
		for _, d := range l {
			if s, ok := d.(string); ok && s == "last" {
				last = true
				continue
			}
			n, ok := intOf(d)
			if !ok || n < 1 || n > 31 {
				return "", fmt.Errorf("visual_config.monthly_days: %v is not a day from 1 to 31, or last", d)
			}
			if !slices.Contains(nums, n) {
				nums = append(nums, n)
			}
		}
		sort.Ints(nums)
		days := make([]string, 0, len(nums)+1)
		for _, n := range nums {
			days = append(days, strconv.Itoa(n))
		}
		if last {
			days = append(days, "L")
		}
		return fmt.Sprintf("%d %d %s * *", m, h, strings.Join(days, ",")), nil
	case "":
		return "", errors.New("frequency: required in visual mode (hourly, daily, weekly or monthly)")
	}
	return "", fmt.Errorf("frequency: %q is not hourly, daily, weekly or monthly", frequency)
}

// To24h reads a 12-hour time ("2:30 PM") as an hour and a minute, as Dify's convert_12h_to_24h.
func To24h(s string) (hour, minute int, err error) {
	parts := strings.Fields(s)
	if len(parts) != 2 {
		return 0, 0, fmt.Errorf("%q is not a time such as \"2:30 PM\"", s)
	}
	period := strings.ToUpper(parts[1])
	if period != "AM" && period != "PM" {
		return 0, 0, fmt.Errorf("%q: the period is AM or PM", s)
	}
	hm := strings.Split(parts[0], ":")
	if len(hm) != 2 {
		return 0, 0, fmt.Errorf("%q is not a time such as \"2:30 PM\"", s)
	}
	h, err1 := strconv.Atoi(hm[0])
	m, err2 := strconv.Atoi(hm[1])
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("%q is not a time such as \"2:30 PM\"", s)
	case h < 1 || h > 12:
		return 0, 0, fmt.Errorf("%q: the hour is from 1 to 12", s)
	case m < 0 || m > 59:
		return 0, 0, fmt.Errorf("%q: the minute is from 0 to 59", s)
	}
	switch {
	case period == "PM" && h != 12:
		h += 12
	case period == "AM" && h == 12:
		h = 0
	}
	return h, m, nil
}
