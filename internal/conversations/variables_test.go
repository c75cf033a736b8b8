package conversations

import "testing"

// TestCheckVariableName: Dify's screen of the variable_name filter — letters (any script),
// digits, '-', '_' and '.', and none of the fragments it looks for.
func TestCheckVariableName(t *testing.T) {
	for name, ok := range map[string]bool{
		"turns": true, "last_question": true, "a.b-c_1": true, "Ümlaut": true, "名前": true,
		"a b": false, "a'": false, `a"`: false, "a;": false, "a/b": false, "%": false, "---": false, "_": false,
		"x--y": false, "XP_cmd": false, "has_sp_inside": false, "sp_": false,
	} {
		if err := CheckVariableName(name); (err == nil) != ok {
			t.Errorf("%q: %v, want ok=%v", name, err, ok)
		}
	}
}
