package condition

import "testing"

func BenchmarkSelectCase(b *testing.B) {
	cases := []Case{
		{CaseID: "a", LogicalOperator: "and", Conditions: []Condition{{VariableSelector: []string{"sys", "query"}, ComparisonOperator: "contains", Value: "cancel"}}},
		{CaseID: "b", LogicalOperator: "or", Conditions: []Condition{
			{VariableSelector: []string{"start", "n"}, ComparisonOperator: "≥", Value: "{{#start.limit#}}"},
			{VariableSelector: []string{"sys", "query"}, ComparisonOperator: "start with", Value: "refund"}}},
	}
	lookup := pool()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := SelectCase(cases, lookup); err != nil {
			b.Fatal(err)
		}
	}
}
