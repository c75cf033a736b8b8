// Package value is the runtime value model shared by every workflow node.
//
// A value is plain Go: nil, string, int64, float64, bool, []any, *Object (a string-keyed map that
// keeps insertion order, as a Python dict does) or *File (a Dify file). Decode and FromGo produce
// only these types. Text, Markdown and Log render a value as Dify's segments do in LLM prompts,
// answer nodes and logs; TypeOf names its type as Dify names variable types.
package value
