package builtin

import (
	"strings"
	"testing"
)

func TestEvalExpression(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	for expr, want := range map[string]string{
		"1 + 2 * 3":                     "7",
		"(1 + 2) * 3":                   "9",
		"2 ** 3 ** 2":                   "512",
		"2 ^ 10":                        "1024",
		"-2 ** 2":                       "-4",
		"2 ** -1":                       "0.5",
		"2 * -3":                        "-6",
		"--3":                           "3",
		"7 // 2":                        "3",
		"-7 // 2":                       "-4",
		"-7 % 3":                        "2",
		"7 % -3":                        "-2",
		"10 / 4":                        "2.5",
		"sqrt(16) + abs(-2)":            "6",
		"round(2.5)":                    "2",
		"arctan2(1, 1) * 4":             "3.141592653589793",
		"pi":                            "3.141592653589793",
		"1.5e3 + .5":                    "1500.5",
		"log10(1000)":                   "3",
		" 0.1 + 0.2 ":                   "0.30000000000000004",
		"1e20":                          "1e+20",
		"floor(-0.5)":                   "-1",
		strings.Repeat("1+", 499) + "1": "500",
	} {
		wantText(t, call(t, s, "maths", "eval_expression", nil, `{"expression":"`+expr+`"}`), want)
	}
	for expr, why := range map[string]string{
		"":                              "expression is required",
		"1 / 0":                         "division by zero",
		"1 % 0":                         "division by zero",
		"10 ** 400":                     "not a finite number",
		"sqrt(-1)":                      "not a finite number",
		"1e999":                         "not a finite number",
		"__import__('os').system('id')": "unknown function",
		"os.system":                     "unknown name",
		"open":                          "unknown name",
		"1 +":                           "unexpected end",
		"(1 + 2":                        "expected )",
		"1 2":                           "unexpected",
		"1.2.3":                         "unexpected",
		"sqrt(1, 2)":                    "takes 1 argument",
		"pow(2)":                        "takes 2 argument",
		"2 $ 3":                         "unexpected",
		"1 + é":                         "unexpected",
		strings.Repeat("(", 70) + "1" + strings.Repeat(")", 70): "nested deeper",
		strings.Repeat("-", 70) + "1":                           "nested deeper",
		strings.Repeat("1+", 600) + "1":                         "longer than",
	} {
		wantError(t, call(t, s, "maths", "eval_expression", nil, `{"expression":"`+expr+`"}`), why)
	}
}

// FuzzEvalExpression: no input makes the evaluator panic, loop or recurse without bound.
func FuzzEvalExpression(f *testing.F) {
	for _, s := range []string{"1+2*3", "2**3**2", "sqrt(arctan2(1,2))", "((((1))))", "-(-(-1))", "1e308*10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = evalExpression(s)
	})
}
