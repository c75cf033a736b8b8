package filetools

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// A date in a workbook is a number of days since an epoch in a cell whose number format shows a
// date. openpyxl turns it into a Python datetime (a time of day below 1, a timedelta for an
// elapsed-time format such as [h]:mm:ss), and the plugin's pandas writes that as str() spells
// it: "2020-02-20 00:00:00", "12:30:00", "1 day, 2:00:00". These functions do the same.

var (
	// windowsEpoch is day 0 of the 1900 date system, one day early so that days from March 1900
	// on come out right despite Excel's phantom 29 February 1900 (openpyxl's WINDOWS_EPOCH).
	windowsEpoch = time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)
	// macEpoch is day 0 of the 1904 date system.
	macEpoch = time.Date(1904, 1, 1, 0, 0, 0, 0, time.UTC)
)

const (
	msPerDay = 86400 * 1000
	// maxTimedeltaDays is Python's timedelta bound.
	maxTimedeltaDays = 999_999_999
)

// pyDatetime spells serial day v as openpyxl's from_excel and str() spell it; ok is false when
// Python's datetime cannot hold it (openpyxl then makes the cell the error #VALUE!). label is
// the column name pandas' to_json makes of it: a datetime's milliseconds since 1970, a time of
// day's text.
func pyDatetime(v float64, date1904 bool) (text, label string, ok bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e8 {
		return "", "", false
	}
	day := math.Floor(v)
	ms := math.RoundToEven((v - day) * 86400 * 1000) // Python's round() of the day's fraction
	if 0 <= v && v < 1 && ms < msPerDay {
		t := pyTime(int64(ms))
		return t, t, true
	}
	epoch := windowsEpoch
	switch {
	case date1904:
		epoch = macEpoch
	case 0 < v && v < 60:
		day++ // before Excel's phantom 29 February 1900
	}
	t := epoch.AddDate(0, 0, int(day)).Add(time.Duration(ms) * time.Millisecond)
	if t.Year() < 1 || t.Year() > 9999 {
		return "", "", false
	}
	out := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d", t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second())
	if us := t.Nanosecond() / 1000; us != 0 {
		out += fmt.Sprintf(".%06d", us)
	}
	return out, strconv.FormatInt(t.UnixMilli(), 10), true
}

// pyTime spells a time of day given in milliseconds as str(datetime.time) does.
func pyTime(ms int64) string {
	s, frac := ms/1000, ms%1000
	out := fmt.Sprintf("%02d:%02d:%02d", s/3600, s/60%60, s%60)
	if frac != 0 {
		out += fmt.Sprintf(".%06d", frac*1000)
	}
	return out
}

// pyTimedelta spells v days as openpyxl's from_excel makes an elapsed time (to the microsecond,
// then a fraction of a second rounded to the millisecond) and str(timedelta) spells it:
// "[-]D day[s], H:MM:SS[.ffffff]", days and seconds normalised as Python normalises them.
// label is the column name pandas' to_json makes of it: its milliseconds.
func pyTimedelta(v float64) (text, label string, ok bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > maxTimedeltaDays {
		return "", "", false
	}
	us := math.RoundToEven(v * 86400 * 1e6)
	if frac := us - math.Floor(us/1e6)*1e6; frac != 0 {
		us = us - frac + math.RoundToEven(frac/1000)*1000
	}
	total := int64(us)
	days := floorDiv(total, 86400*1e6)
	rest := total - days*86400*1e6
	secs, micros := rest/1e6, rest%1e6
	var b strings.Builder
	if days != 0 {
		plural := "s"
		if days == 1 || days == -1 {
			plural = ""
		}
		fmt.Fprintf(&b, "%d day%s, ", days, plural)
	}
	fmt.Fprintf(&b, "%d:%02d:%02d", secs/3600, secs/60%60, secs%60)
	if micros != 0 {
		fmt.Fprintf(&b, ".%06d", micros)
	}
	return b.String(), strconv.FormatInt(floorDiv(total, 1000), 10), true
}

// floorDiv is Python's a // b for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// isoLayouts are the forms of a date cell's ISO 8601 text (type "d") read here, with how str()
// spells each: a date alone as a date, a time alone as a time, anything else as a datetime.
var isoLayouts = []struct{ in, out string }{
	{"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02 15:04:05.000000"},
	{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.000000"},
	{"2006-01-02", "2006-01-02"},
	{"15:04:05.999999999", "15:04:05.000000"},
}

// pyISODate spells a date cell's ISO 8601 text as str() spells what openpyxl reads from it;
// ok is false for other text.
func pyISODate(s string) (string, bool) {
	for _, l := range isoLayouts {
		t, err := time.Parse(l.in, s)
		if err != nil {
			continue
		}
		out := t.Format(l.out)
		if t.Nanosecond()/1000 == 0 {
			out = strings.TrimSuffix(out, ".000000")
		}
		return out, true
	}
	return "", false
}
