package filetools

import (
	"math"
	"testing"
)

// TestPyFloatRepr: floats are spelled as Python's repr spells them (values from Python 3).
func TestPyFloatRepr(t *testing.T) {
	t.Parallel()
	for f, want := range map[float64]string{
		1.5: "1.5", 2: "2.0", -3: "-3.0", 0.30000000000000004: "0.30000000000000004", 1e16: "1e+16", 1e15: "1000000000000000.0",
		9999999999999998: "9999999999999998.0", 0.0001: "0.0001", 0.00001: "1e-05", 1.5e-7: "1.5e-07", 123456789.123: "123456789.123",
		math.MaxFloat64: "1.7976931348623157e+308", 5e-324: "5e-324", 1234567890123456789: "1.2345678901234568e+18",
		math.Copysign(0, -1): "-0.0", 0: "0.0", math.Inf(1): "inf", 100: "100.0", 1e22: "1e+22",
	} {
		if got := pyFloatRepr(f); got != want {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
}

// TestPyNumbers: int() and float() read what Python reads and refuse what it refuses.
func TestPyNumbers(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"007": "7", " -0 ": "0", "+12": "12", "1_000": "1000", "123456789012345678901234567890": "123456789012345678901234567890", "١٢": "12", "𝟘𝟙𝟟": "17"} {
		if got, ok := pyInt(in); !ok || got != want {
			t.Errorf("int(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "1.0", "1__0", "_1", "0x10", "²"} {
		if got, ok := pyInt(in); ok {
			t.Errorf("int(%q) = %q, want refused", in, got)
		}
	}
	for in, want := range map[string]float64{"1.5": 1.5, " .5": 0.5, "5.": 5, "1e3": 1000, "1_0.2_5": 10.25, "-Infinity": math.Inf(-1), "1e999": math.Inf(1), "+2E-1": 0.2, "٣.٥": 3.5} {
		if got, ok := pyFloat(in); !ok || got != want {
			t.Errorf("float(%q) = %v %v, want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", ".", "e3", "0x1p3", "1,5", "1_", "infinit", "1e"} {
		if got, ok := pyFloat(in); ok {
			t.Errorf("float(%q) = %v, want refused", in, got)
		}
	}
}

// FuzzPyFloat: every float's Python spelling reads back as that float, and what float()
// accepts never panics the conversion of chart values.
func FuzzPyFloat(f *testing.F) {
	f.Add(1.5, "1_0.5e-3")
	f.Add(1e16, " -inf ")
	f.Add(5e-324, "0x10")
	f.Fuzz(func(t *testing.T, v float64, text string) {
		s := pyFloatRepr(v)
		back, ok := pyFloat(s)
		if !ok || (back != v && !(math.IsNaN(v) && math.IsNaN(back))) || math.Signbit(back) != math.Signbit(v) {
			t.Fatalf("%v → %q → %v %v", v, s, back, ok)
		}
		if g, ok := pyFloat(text); ok && !math.IsNaN(g) && !math.IsInf(g, 0) {
			if _, ok := pyFloat(pyFloatRepr(g)); !ok {
				t.Fatalf("%q", text)
			}
		}
		_, _ = pyInt(text)
		_, _ = chartValues(text)
	})
}
