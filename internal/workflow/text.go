package workflow

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Texter is implemented by values with a text form of their own (files, ordered objects).
type Texter interface {
	Text() string
}

// Text is the text a value shows in an answer or a prompt: strings as they are, numbers in
// their shortest form, nothing for a missing value, and objects and arrays as JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		if x {
			return "true"
		}
		return "false"
	case Texter:
		return x.Text()
	case json.RawMessage:
		return string(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
