package nodes

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/condition"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// ifElse takes the branch of its first case that holds (the case id is the handle), or
// "false". Old exports have one condition list with its logical operator instead of cases; it is
// the case "true".
type ifElse struct{ cases []condition.Case }

func newIfElse(n *workflow.Node) (workflow.NodeRunner, error) {
	ie := &ifElse{}
	if raw, ok := n.Data["cases"]; ok && raw != nil {
		if err := decodeInto(raw, &ie.cases); err != nil {
			return nil, configError("cases: %v", err)
		}
	} else {
		c := condition.Case{CaseID: "true", LogicalOperator: str(n.Data["logical_operator"])}
		if err := decodeInto(n.Data["conditions"], &c.Conditions); err != nil {
			return nil, configError("conditions: %v", err)
		}
		ie.cases = []condition.Case{c}
	}
	return ie, nil
}

func (ie *ifElse) Run(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
	id, last, err := condition.SelectCase(ie.cases, x.Pool.Get)
	if err != nil {
		typ := "IfElseNodeError"
		if errors.Is(err, condition.ErrInvalid) {
			typ = "InvalidConditionError"
		}
		return workflow.Result{}, workflow.Errorf(typ, "%v", err)
	}
	inputs := make([]any, len(last.Inputs))
	for i, in := range last.Inputs {
		inputs[i] = value.ObjectOf("actual_value", in.ActualValue, "expected_value", in.ExpectedValue,
			"comparison_operator", in.ComparisonOperator)
	}
	return workflow.Result{
		Inputs:      map[string]any{"conditions": inputs},
		ProcessData: map[string]any{"condition_results": []any{value.ObjectOf("group", id, "results", boolsOf(last.GroupResults), "final_result", last.Final)}},
		Outputs:     map[string]any{"result": id != "false", "selected_case_id": id},
		Handle:      id,
	}, nil
}

func boolsOf(bs []bool) []any {
	out := make([]any, len(bs))
	for i, b := range bs {
		out[i] = b
	}
	return out
}

// decodeInto reads a DSL value into a typed shape, through JSON.
func decodeInto(v any, into any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}
