package apps

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// InputError is an input that does not fit the app's form; its message is Dify's.
type InputError struct{ Message string }

func (e *InputError) Error() string { return e.Message }

// SafeMessage implements safeerr.Error.
func (e *InputError) SafeMessage() string { return e.Message }

// ValidateInputs checks inputs against the app's form as Dify does and returns the values the
// app runs with: declared inputs only, defaults filled in, numbers as numbers. Undeclared keys
// are dropped.
func (a *App) ValidateInputs(inputs map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(a.UserInputForm))
	for _, f := range a.UserInputForm {
		v, present := inputs[f.Variable]
		if s, ok := v.(string); ok {
			v = strings.ReplaceAll(s, "\x00", "")
		}
		if !present || v == nil || v == "" {
			if f.Required {
				return nil, &InputError{f.Variable + " is required in input form"}
			}
			if f.Default != "" {
				out[f.Variable] = defaultValue(f)
			} else {
				out[f.Variable] = ""
			}
			continue
		}
		switch f.Type {
		case InputText, InputParagraph:
			s, ok := v.(string)
			if !ok {
				return nil, &InputError{f.Variable + " in input form must be a string"}
			}
			if f.MaxLength > 0 && len([]rune(s)) > f.MaxLength {
				return nil, &InputError{fmt.Sprintf("%s in input form must be less than %d characters", f.Variable, f.MaxLength)}
			}
			out[f.Variable] = s
		case InputSelect:
			s, ok := v.(string)
			if !ok || !slices.Contains(f.Options, s) {
				return nil, &InputError{fmt.Sprintf("%s in input form must be one of the following: %s", f.Variable, pyList(f.Options))}
			}
			out[f.Variable] = s
		case InputNumber:
			n, ok := toNumber(v)
			if !ok {
				return nil, &InputError{f.Variable + " in input form must be a valid number"}
			}
			out[f.Variable] = n
		case InputCheckbox:
			b, ok := v.(bool)
			if !ok {
				return nil, &InputError{f.Variable + " in input form must be a boolean"}
			}
			out[f.Variable] = b
		case inputFile:
			// As Dify: a file input is a file object ({type, transfer_method, …}), checked
			// further where it is turned into a file.
			if _, ok := v.(map[string]any); !ok {
				return nil, &InputError{f.Variable + " in input form must be a file"}
			}
			out[f.Variable] = v
		case inputFileList:
			list, ok := v.([]any)
			for _, it := range list {
				if _, isFile := it.(map[string]any); !isFile {
					ok = false
				}
			}
			if !ok {
				return nil, &InputError{f.Variable + " in input form must be a list of files"}
			}
			out[f.Variable] = v
		default:
			out[f.Variable] = v
		}
	}
	return out, nil
}

func defaultValue(f InputField) any {
	switch f.Type {
	case InputNumber:
		if n, ok := toNumber(f.Default); ok {
			return n
		}
	case InputCheckbox:
		return f.Default == "true"
	}
	return f.Default
}

// toNumber accepts a JSON number or a numeric string; integral values stay integers.
func toNumber(v any) (any, bool) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int:
		return n, true
	case string:
		p, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err != nil {
			return nil, false
		}
		f = p
	default:
		return nil, false
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f), true
	}
	return f, true
}

// pyList renders options as Python prints a list, which is what Dify's message shows.
func pyList(opts []string) string {
	q := make([]string, len(opts))
	for i, o := range opts {
		q[i] = "'" + o + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}
