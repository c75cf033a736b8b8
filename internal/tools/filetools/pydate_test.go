package filetools

import (
	"math"
	"regexp"
	"slices"
	"testing"
)

// TestPyDates: serial days are the datetimes, times and timedeltas openpyxl makes of them, as
// str() spells them (values from openpyxl's from_excel under Python 3).
func TestPyDates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v        float64
		date1904 bool
		want     string
	}{
		{43881, false, "2020-02-20 00:00:00"},
		{43863.520833333336, false, "2020-02-02 12:30:00"},
		{59, false, "1900-02-28 00:00:00"},
		{60, false, "1900-02-28 00:00:00"}, // Excel's phantom 29 February 1900
		{61, false, "1900-03-01 00:00:00"},
		{1, false, "1900-01-01 00:00:00"},
		{0.5, false, "12:00:00"},
		{0, false, "00:00:00"},
		{0.9999999999, false, "1900-01-01 00:00:00"}, // rounds to a whole day
		{0.000011574, false, "00:00:01"},
		{0.0000005, false, "00:00:00.043000"},
		{1, true, "1904-01-02 00:00:00"},
		{-1, false, "1899-12-29 00:00:00"},
		{2958465, false, "9999-12-31 00:00:00"},
	} {
		if got, _, ok := pyDatetime(tc.v, tc.date1904); !ok || got != tc.want {
			t.Errorf("%v (1904: %v): %q %v, want %q", tc.v, tc.date1904, got, ok, tc.want)
		}
	}
	for _, v := range []float64{2958466, -700000, math.NaN(), 1e300} {
		if got, _, ok := pyDatetime(v, false); ok {
			t.Errorf("%v: %q, want out of range", v, got)
		}
	}
	for v, want := range map[float64]string{1.5: "1 day, 12:00:00", 0.5: "12:00:00", 2: "2 days, 0:00:00", -0.25: "-1 day, 18:00:00",
		0.0000005: "0:00:00.043000", 1.0 / 86400 / 3: "0:00:00.333000"} {
		if got, _, ok := pyTimedelta(v); !ok || got != want {
			t.Errorf("timedelta %v: %q %v, want %q", v, got, ok, want)
		}
	}
	for in, want := range map[string]string{"2020-02-20": "2020-02-20", "2020-02-20T10:11:12Z": "2020-02-20 10:11:12",
		"2020-02-20T10:11:12.5": "2020-02-20 10:11:12.500000", "10:11:12": "10:11:12"} {
		if got, ok := pyISODate(in); !ok || got != want {
			t.Errorf("ISO %q: %q %v, want %q", in, got, ok, want)
		}
	}
}

// TestNumberFormats: the formats openpyxl reads as dates and as elapsed times.
func TestNumberFormats(t *testing.T) {
	t.Parallel()
	for code, want := range map[string][2]bool{ // {date, timedelta}
		"General": {}, "0.00": {}, "0.00E+00": {}, `#,##0.00_);[Red](#,##0.00)`: {}, "@": {}, "": {},
		"mm-dd-yy": {true, false}, "yyyy-mm-dd;@": {true, false}, `[$-409]d-mmm-yy`: {true, false},
		`0.00" days"`: {}, `0.00\h`: {}, "[Red]0.00": {}, "_-* #,##0_-;-* #,##0_-": {},
		"[h]:mm:ss": {true, true}, "[mm]:ss": {true, true}, "[H]:MM": {true, true}, "h:mm AM/PM": {true, false},
		"0;[h]": {}, `"date:"yyyy`: {true, false},
	} {
		if got := [2]bool{isDateFormat(code), isTimedeltaFormat(code)}; got != want {
			t.Errorf("%q: date, timedelta %v, want %v", code, got, want)
		}
	}
}

// TestDedupe: repeated column names are renamed as pandas renames a header's (checked against
// pandas): a name the header has is skipped, and unnamed columns are renamed last.
func TestDedupe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want []string
		unnamed  []int
	}{
		{[]string{"A", "A", "A"}, []string{"A", "A.1", "A.2"}, nil},
		{[]string{"A", "A.1", "A"}, []string{"A", "A.1", "A.2"}, nil},
		{[]string{"A", "A", "A.1"}, []string{"A", "A.2", "A.1"}, nil},
		{[]string{"Unnamed: 0", "Unnamed: 0"}, []string{"Unnamed: 0.1", "Unnamed: 0"}, []int{0}},
		{[]string{"Unnamed: 1", "Unnamed: 1", "x"}, []string{"Unnamed: 1", "Unnamed: 1.1", "x"}, []int{1}},
		{[]string{"x", "y"}, []string{"x", "y"}, nil},
	} {
		if got := dedupe(slices.Clone(tc.in), tc.unnamed); !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzPyDates: any serial day converts or is out of range, in one of str()'s forms, and any
// number format code is classified without a panic.
func FuzzPyDates(f *testing.F) {
	f.Add(43881.5, "yyyy-mm-dd;@")
	f.Add(-0.25, "[h]:mm:ss")
	f.Add(2958465.9999999, `"x"[Red]\d_m`)
	f.Add(1e-300, "[")
	f.Fuzz(func(t *testing.T, v float64, code string) {
		if s, _, ok := pyDatetime(v, false); ok && !dateForm.MatchString(s) {
			t.Fatalf("%v: %q", v, s)
		}
		if s, _, ok := pyDatetime(v, true); ok && !dateForm.MatchString(s) {
			t.Fatalf("1904 %v: %q", v, s)
		}
		if s, _, ok := pyTimedelta(v); ok && !timedeltaForm.MatchString(s) {
			t.Fatalf("timedelta %v: %q", v, s)
		}
		_ = isDateFormat(code)
		_ = isTimedeltaFormat(code)
	})
}

var (
	dateForm      = regexp.MustCompile(`^(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(\.\d{6})?$`)
	timedeltaForm = regexp.MustCompile(`^(-?\d+ days?, )?\d+:\d\d:\d\d(\.\d{6})?$`)
)
