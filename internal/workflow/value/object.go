package value

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Object is a string-keyed map that remembers insertion order. Setting an existing key keeps its
// position; deleting and re-adding a key moves it to the end, as a Python dict does. The zero
// value is not usable: build one with NewObject.
type Object struct {
	keys []string
	m    map[string]any
}

// NewObject returns an empty object.
func NewObject() *Object { return &Object{m: map[string]any{}} }

// ObjectOf builds an object from alternating key, value arguments; it panics on an odd count or a
// non-string key and is meant for literals in code and tests.
func ObjectOf(kv ...any) *Object {
	if len(kv)%2 != 0 {
		panic("value.ObjectOf: odd number of arguments")
	}
	o := NewObject()
	for i := 0; i < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

// Get returns the value stored under key and whether the key is present.
func (o *Object) Get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.m[key]
	return v, ok
}

// Set stores v under key, appending the key if it is new.
func (o *Object) Set(key string, v any) {
	if _, ok := o.m[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.m[key] = v
}

// Delete removes key; it reports whether the key was present.
func (o *Object) Delete(key string) bool {
	if _, ok := o.m[key]; !ok {
		return false
	}
	delete(o.m, key)
	for i, k := range o.keys {
		if k == key {
			o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
			break
		}
	}
	return true
}

// Keys returns the keys in insertion order (a copy).
func (o *Object) Keys() []string {
	if o == nil {
		return nil
	}
	return append([]string(nil), o.keys...)
}

// Len returns the number of keys.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.keys)
}

// Range calls fn for each entry in insertion order until fn returns false.
func (o *Object) Range(fn func(key string, v any) bool) {
	if o == nil {
		return
	}
	for _, k := range o.keys {
		if !fn(k, o.m[k]) {
			return
		}
	}
}

// Clone returns a deep copy: nested objects and arrays are copied, files are shared.
func (o *Object) Clone() *Object {
	if o == nil {
		return nil
	}
	c := &Object{keys: append([]string(nil), o.keys...), m: make(map[string]any, len(o.m))}
	for k, v := range o.m {
		c.m[k] = Clone(v)
	}
	return c
}

// Clone deep-copies objects and arrays; other values are immutable or shared (files).
func Clone(v any) any {
	switch t := v.(type) {
	case *Object:
		return t.Clone()
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = Clone(e)
		}
		return c
	default:
		return v
	}
}

// MarshalJSON encodes the object with its keys in insertion order.
func (o *Object) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := json.Marshal(o.m[k])
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON decodes a JSON object keeping key order; nested values follow Decode's rules.
func (o *Object) UnmarshalJSON(b []byte) error {
	v, err := Decode(b)
	if err != nil {
		return err
	}
	obj, ok := v.(*Object)
	if !ok {
		return fmt.Errorf("value: JSON %s is not an object", TypeOf(v))
	}
	*o = *obj
	return nil
}
