package value

import "strings"

// Conforms reports whether v is a value of the Dify variable type typ: string (and secret),
// number (an integer or a float, not a boolean), integer, float, boolean, object, file, none,
// any, and array[string|number|boolean|object|file|any], every element checked. An unknown type
// name conforms to nothing.
func Conforms(v any, typ string) bool {
	if elem, ok := strings.CutPrefix(typ, "array["); ok {
		elem, ok = strings.CutSuffix(elem, "]")
		a, isArr := v.([]any)
		if !ok || !isArr {
			return false
		}
		if elem == "any" {
			return true
		}
		for _, e := range a {
			if !Conforms(e, elem) {
				return false
			}
		}
		return elem == "string" || elem == "number" || elem == "boolean" || elem == "object" || elem == "file"
	}
	switch typ {
	case "string", "secret":
		_, ok := v.(string)
		return ok
	case "number":
		switch v.(type) {
		case int64, float64:
			return true
		}
		return false
	case "integer":
		_, ok := v.(int64)
		return ok
	case "float":
		_, ok := v.(float64)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(*Object)
		return ok
	case "file":
		_, ok := v.(*File)
		return ok
	case "none":
		return v == nil
	case "any":
		return true
	}
	return false
}
