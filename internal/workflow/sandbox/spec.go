package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"

	"gopkg.in/yaml.v3"
)

// OutputSpecs are a code node's declared outputs as the DSL writes them, a mapping from name to
// {type, children}, read in the order of the document (Dify returns the outputs in that order):
//
//	outputs:
//	  result: {type: string, children: null}
//	  meta: {type: object, children: {id: {type: number, children: null}}}
//
// children: null (or absent) gives nil Children, a mapping (even empty) a non-nil list.
type OutputSpecs []OutputSpec

type specBody struct {
	Type     string  `yaml:"type" json:"type"`
	Children *rawSub `yaml:"children" json:"children"`
}

// rawSub holds a children mapping until it is read in order.
type rawSub struct {
	yaml *yaml.Node
	json json.RawMessage
}

func (r *rawSub) UnmarshalYAML(n *yaml.Node) error { r.yaml = n; return nil }
func (r *rawSub) UnmarshalJSON(b []byte) error {
	r.json = append(json.RawMessage(nil), b...)
	return nil
}

// UnmarshalYAML reads the outputs mapping in document order.
func (s *OutputSpecs) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		*s = nil
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: outputs must be a mapping", n.Line)
	}
	out := OutputSpecs{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		var body specBody
		if err := n.Content[i+1].Decode(&body); err != nil {
			return err
		}
		spec := OutputSpec{Name: n.Content[i].Value, Type: body.Type}
		if body.Children != nil && body.Children.yaml != nil {
			var sub OutputSpecs
			if err := sub.UnmarshalYAML(body.Children.yaml); err != nil {
				return err
			}
			spec.Children = sub
		}
		out = append(out, spec)
	}
	*s = out
	return nil
}

// UnmarshalJSON reads the outputs object in document order.
func (s *OutputSpecs) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*s = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("outputs must be an object")
	}
	out := OutputSpecs{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		var body specBody
		if err := dec.Decode(&body); err != nil {
			return err
		}
		spec := OutputSpec{Name: kt.(string), Type: body.Type}
		if body.Children != nil && len(body.Children.json) > 0 {
			var sub OutputSpecs
			if err := sub.UnmarshalJSON(body.Children.json); err != nil {
				return err
			}
			spec.Children = sub
		}
		out = append(out, spec)
	}
	*s = out
	return nil
}
