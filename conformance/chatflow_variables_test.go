package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/client"
)

// variablesDSL is the Chatflow of testdata/chatflow-variables.yml, named for the test.
func variablesDSL(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "chatflow-variables.yml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flow.yml")
	doc := strings.Replace(string(raw), "name: Variable Echo", "name: "+name, 1)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// listVars lists a conversation's variables through the generated client and fails t unless
// the answer is a 200.
func listVars(t *testing.T, c *client.ClientWithResponses, conv string, params client.ListConversationVariablesParams) client.ConversationVariableList {
	t.Helper()
	r, err := c.ListConversationVariablesWithResponse(context.Background(), conv, &params)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("list variables: %v %d %s", err, r.StatusCode(), r.Body)
	}
	return *r.JSON200
}

func putVar(t *testing.T, c *client.ClientWithResponses, conv, id, user, value string) *client.UpdateConversationVariableResponse {
	t.Helper()
	r, err := c.UpdateConversationVariableWithResponse(context.Background(), conv, id,
		client.UpdateConversationVariableJSONRequestBody{Value: json.RawMessage(value), User: &user})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const (
	varNickname = "0e6f1a20-0000-4000-8000-000000000001"
	varTurns    = "0e6f1a20-0000-4000-8000-000000000002"
	varPrefs    = "0e6f1a20-0000-4000-8000-000000000004"
	varTags     = "0e6f1a20-0000-4000-8000-000000000005"
	varScores   = "0e6f1a20-0000-4000-8000-000000000006"
	varEnabled  = "0e6f1a20-0000-4000-8000-000000000007"
	varItems    = "0e6f1a20-0000-4000-8000-000000000008"
)

// TestConversationVariables runs a Chatflow that prints its conversation variables, on both
// engines through the generated client: after the first turn the conversation lists them with
// their DSL defaults, types and descriptions, in declaration order, in pages and filtered by
// name; a PUT of a value of the right type is what the next turn prints; every bad request is a
// 4xx with the Error body and changes nothing; another user's conversation and other app kinds
// are refused as Dify refuses them.
func TestConversationVariables(t *testing.T) {
	forEachOwnServer(t, func(t *testing.T, p *Parley) {
		ctx := context.Background()
		name := "Variable Echo " + strings.ReplaceAll(t.Name(), "/", "-")
		if got := p.CLI(t, "apps", "import", variablesDSL(t, name)); got != name {
			t.Fatalf("import printed %q", got)
		}
		p.CLI(t, "apps", "publish", name)
		appKey := p.CLI(t, "keys", "create", "--app", name)
		c := newClient(t, p, appKey)

		ask := func(conv, user string) (string, string) {
			t.Helper()
			body := client.SendChatMessageJSONRequestBody{Query: marker(t, "echo"), User: user, Inputs: map[string]any{}}
			if conv != "" {
				body.ConversationId = &conv
			}
			r, err := c.SendChatMessageWithResponse(ctx, nil, body)
			if err != nil || r.JSON200 == nil {
				t.Fatalf("send: %v %s", err, r.Body)
			}
			return r.JSON200.ConversationId.String(), r.JSON200.Answer
		}
		conv, answer := ask("", "u1")
		// An answer node renders arrays as Markdown lists and objects as indented JSON, as Dify's.
		const first = "nickname=Ada turns=1 ratio=0.5 enabled=True tags=- a\n- b scores=- 1\n- 2.5 prefs={\n  \"size\": 2,\n  \"theme\": \"dark\"\n} items="
		if answer != first {
			t.Fatalf("first answer\n got %s\nwant %s", answer, first)
		}

		// The whole list: declaration order, DSL defaults as text, types and descriptions.
		all := listVars(t, c, conv, client.ListConversationVariablesParams{User: ptr("u1")})
		type row struct{ id, name, typ, value, desc string }
		want := []row{
			{varNickname, "nickname", "string", "Ada", "What to call the user."},
			{varTurns, "turns", "number", "1", "A counter."},
			{"0e6f1a20-0000-4000-8000-000000000003", "ratio", "number", "0.5", ""},
			{varPrefs, "prefs", "object", `{"size":2,"theme":"dark"}`, "Settings."},
			{varTags, "tags", "array[string]", `["a","b"]`, ""},
			{varScores, "scores", "array[number]", `[1,2.5]`, ""},
			{varEnabled, "enabled", "boolean", "true", "A switch."},
			{varItems, "items", "array[object]", "[]", ""},
		}
		if all.Limit != 20 || all.HasMore || len(all.Data) != len(want) {
			t.Fatalf("list: %+v", all)
		}
		for i, w := range want {
			v := all.Data[i]
			if got := (row{v.Id, v.Name, v.ValueType, v.Value, v.Description}); got != w || v.CreatedAt == 0 || v.UpdatedAt < v.CreatedAt {
				t.Errorf("variable %d: %+v, want %+v", i, v, w)
			}
		}

		// Pages of three, then the filter (case-insensitive substring of the name).
		var paged []string
		params := client.ListConversationVariablesParams{User: ptr("u1"), Limit: ptr(3)}
		for page := 0; ; page++ {
			l := listVars(t, c, conv, params)
			if l.Limit != 3 || len(l.Data) > 3 || page > 3 {
				t.Fatalf("page %d: %+v", page, l)
			}
			for _, v := range l.Data {
				paged = append(paged, v.Name)
			}
			if !l.HasMore {
				break
			}
			params.LastId = ptr(l.Data[len(l.Data)-1].Id)
		}
		if got := strings.Join(paged, " "); got != "nickname turns ratio prefs tags scores enabled items" {
			t.Fatalf("paged: %s", got)
		}
		for filter, names := range map[string]string{"S": "turns prefs tags scores items", "nick": "nickname", "TAGS": "tags", "zzz": ""} {
			l := listVars(t, c, conv, client.ListConversationVariablesParams{User: ptr("u1"), VariableName: ptr(filter)})
			var got []string
			for _, v := range l.Data {
				got = append(got, v.Name)
			}
			if strings.Join(got, " ") != names || l.HasMore {
				t.Errorf("filter %q: %v, want %s", filter, got, names)
			}
		}
		l := listVars(t, c, conv, client.ListConversationVariablesParams{User: ptr("u1"), VariableName: ptr("s"), Limit: ptr(2), LastId: ptr(varPrefs)})
		if len(l.Data) != 2 || l.Data[0].Name != "tags" || l.Data[1].Name != "scores" || !l.HasMore {
			t.Errorf("filtered page after prefs: %+v", l)
		}

		// Bad requests: each a 4xx with the Error body, none changes a value.
		other, _ := ask("", "u2")
		completion := newClient(t, p, p.CompletionKey(t))
		for _, tc := range []struct {
			what, conv, id, user, value string
			status                      int
			code, msg                   string
		}{
			{"string into number", conv, varTurns, "u1", `"7"`, 400, "bad_request", "Type mismatch: variable 'turns' expects number, but got string type"},
			{"boolean into number", conv, varTurns, "u1", `true`, 400, "bad_request", "Type mismatch: variable 'turns' expects number, but got boolean type"},
			{"number into string", conv, varNickname, "u1", `5`, 400, "bad_request", "Type mismatch: variable 'nickname' expects string, but got integer type"},
			{"array into object", conv, varPrefs, "u1", `["x"]`, 400, "bad_request", "Type mismatch: variable 'prefs' expects object, but got array[string] type"},
			{"mixed array[string]", conv, varTags, "u1", `["x", 1]`, 400, "bad_request", "Type mismatch: variable 'tags' expects array[string], but got array[any] type"},
			{"strings into array[number]", conv, varScores, "u1", `["1"]`, 400, "bad_request", "Type mismatch: variable 'scores' expects array[number], but got array[string] type"},
			{"string into boolean", conv, varEnabled, "u1", `"true"`, 400, "bad_request", "Type mismatch: variable 'enabled' expects boolean, but got string type"},
			{"numbers into array[object]", conv, varItems, "u1", `[1]`, 400, "bad_request", "Type mismatch: variable 'items' expects array[object], but got array[number] type"},
			{"unknown variable", conv, "0e6f1a20-0000-4000-8000-0000000000ff", "u1", `"x"`, 404, "not_found", "Conversation Variable Not Exists."},
			{"malformed variable id", conv, "not-a-uuid", "u1", `"x"`, 404, "not_found", "Conversation Variable Not Exists."},
			{"unknown conversation", "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d", varNickname, "u1", `"x"`, 404, "not_found", "Conversation Not Exists."},
			{"malformed conversation id", "conv-1", varNickname, "u1", `"x"`, 404, "not_found", "Conversation Not Exists."},
			{"another user's conversation", other, varNickname, "u1", `"x"`, 404, "not_found", "Conversation Not Exists."},
			{"the right conversation, another user", conv, varNickname, "u2", `"x"`, 404, "not_found", "Conversation Not Exists."},
			{"no user (the anonymous one)", conv, varNickname, "", `"x"`, 404, "not_found", "Conversation Not Exists."},
		} {
			r := putVar(t, c, tc.conv, tc.id, tc.user, tc.value)
			segErr(t, tc.what, r.StatusCode(), r.Body, tc.status, tc.code, tc.msg)
		}
		for _, tc := range []struct {
			what, method, path, body string
			status                   int
			code                     string
		}{
			{"value null", "PUT", "/conversations/" + conv + "/variables/" + varNickname, `{"value":null,"user":"u1"}`, 400, "invalid_param"},
			{"value missing", "PUT", "/conversations/" + conv + "/variables/" + varNickname, `{"user":"u1"}`, 400, "invalid_param"},
			{"body not an object", "PUT", "/conversations/" + conv + "/variables/" + varNickname, `"Grace"`, 400, "invalid_param"},
			{"malformed JSON", "PUT", "/conversations/" + conv + "/variables/" + varNickname, `{"value":`, 400, "bad_request"},
			{"PATCH (Dify routes only PUT)", "PATCH", "/conversations/" + conv + "/variables/" + varNickname, `{"value":"x","user":"u1"}`, 405, "method_not_allowed"},
		} {
			st, b := rawCall(t, p, tc.method, tc.path, tc.body, appKey)
			wantError(t, tc.what, st, b, tc.status, tc.code)
		}
		for _, tc := range []struct {
			what   string
			conv   string
			params client.ListConversationVariablesParams
			status int
			code   string
		}{
			{"limit 0", conv, client.ListConversationVariablesParams{User: ptr("u1"), Limit: ptr(0)}, 400, "invalid_param"},
			{"limit 101", conv, client.ListConversationVariablesParams{User: ptr("u1"), Limit: ptr(101)}, 400, "invalid_param"},
			{"unknown last_id", conv, client.ListConversationVariablesParams{User: ptr("u1"), LastId: ptr("0e6f1a20-0000-4000-8000-0000000000ff")}, 400, "invalid_param"},
			{"malformed last_id", conv, client.ListConversationVariablesParams{User: ptr("u1"), LastId: ptr("nope")}, 400, "invalid_param"},
			{"last_id outside the filter", conv, client.ListConversationVariablesParams{User: ptr("u1"), LastId: ptr(varNickname), VariableName: ptr("tags")}, 400, "invalid_param"},
			{"variable_name with a space", conv, client.ListConversationVariablesParams{User: ptr("u1"), VariableName: ptr("a b")}, 400, "invalid_param"},
			{"variable_name with a quote", conv, client.ListConversationVariablesParams{User: ptr("u1"), VariableName: ptr("a'")}, 400, "invalid_param"},
			{"variable_name screened", conv, client.ListConversationVariablesParams{User: ptr("u1"), VariableName: ptr("sp_x")}, 400, "invalid_param"},
			{"variable_name too long", conv, client.ListConversationVariablesParams{User: ptr("u1"), VariableName: ptr(strings.Repeat("a", 256))}, 400, "invalid_param"},
			{"unknown conversation", "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d", client.ListConversationVariablesParams{User: ptr("u1")}, 404, "not_found"},
			{"malformed conversation id", "conv-1", client.ListConversationVariablesParams{User: ptr("u1")}, 404, "not_found"},
			{"another user's conversation", other, client.ListConversationVariablesParams{User: ptr("u1")}, 404, "not_found"},
			{"no user (the anonymous one)", conv, client.ListConversationVariablesParams{}, 404, "not_found"},
		} {
			r, err := c.ListConversationVariablesWithResponse(ctx, tc.conv, &tc.params)
			if err != nil {
				t.Fatal(err)
			}
			wantError(t, "list: "+tc.what, r.StatusCode(), r.Body, tc.status, tc.code)
		}
		if r, err := completion.ListConversationVariablesWithResponse(ctx, conv, &client.ListConversationVariablesParams{User: ptr("u1")}); err != nil {
			t.Fatal(err)
		} else {
			wantError(t, "completion app", r.StatusCode(), r.Body, 400, "not_chat_app")
		}
		if r := putVar(t, completion, conv, varNickname, "u1", `"x"`); r.StatusCode() != 400 {
			t.Errorf("completion app PUT: %d %s", r.StatusCode(), r.Body)
		} else {
			wantError(t, "completion app PUT", r.StatusCode(), r.Body, 400, "not_chat_app")
		}
		if again := listVars(t, c, conv, client.ListConversationVariablesParams{User: ptr("u1")}); !reflect.DeepEqual(all, again) {
			t.Fatalf("bad requests changed the variables:\n%+v\n%+v", all, again)
		}

		// Updates of the right type: the answer is the variable as stored, and the next turn
		// prints the new values. (The validated body reaches the handler re-encoded: object
		// members sorted by name.)
		for _, u := range []struct{ id, value, text string }{
			{varNickname, `"Grace"`, "Grace"},
			{varTurns, `41`, "41"},
			{varPrefs, `{"z": 1, "a": {"b": [true, null]}}`, `{"a":{"b":[true,null]},"z":1}`},
			{varTags, `["x", "y", "z"]`, `["x","y","z"]`},
			{varScores, `[]`, `[]`},
			{varEnabled, `false`, "false"},
			{varItems, `[{"k": "v"}]`, `[{"k":"v"}]`},
		} {
			r := putVar(t, c, conv, u.id, "u1", u.value)
			if r.JSON200 == nil {
				t.Fatalf("PUT %s %s: %d %s", u.id, u.value, r.StatusCode(), r.Body)
			}
			if v := r.JSON200; v.Id != u.id || v.Value != u.text || v.UpdatedAt < v.CreatedAt {
				t.Errorf("PUT %s %s: %+v", u.id, u.value, v)
			}
		}
		ratio := putVar(t, c, conv, "0e6f1a20-0000-4000-8000-000000000003", "u1", `2`)
		if ratio.JSON200 == nil || ratio.JSON200.Value != "2" || ratio.JSON200.ValueType != "number" || ratio.JSON200.Name != "ratio" {
			t.Fatalf("an integer into a number variable: %d %s", ratio.StatusCode(), ratio.Body)
		}
		_, answer = ask(conv, "u1")
		const second = "nickname=Grace turns=41 ratio=2 enabled=False tags=- x\n- y\n- z scores= prefs={\n  \"a\": {\n    \"b\": [\n      true,\n      null\n    ]\n  },\n  \"z\": 1\n} items=- {'k': 'v'}"
		if answer != second {
			t.Fatalf("the turn after the updates\n got %s\nwant %s", answer, second)
		}
		// The other user's conversation kept its own values.
		if _, a := ask(other, "u2"); a != first {
			t.Fatalf("another conversation changed: %s", a)
		}

		// A Chatbot's conversation has no variables: an empty list, and nothing to update.
		chat := newClient(t, p, p.AppKey)
		cr, err := chat.SendChatMessageWithResponse(ctx, nil, chatBody(marker(t, "chatbot"), "u1", false))
		if err != nil || cr.JSON200 == nil {
			t.Fatalf("chatbot: %v %s", err, cr.Body)
		}
		chatConv := cr.JSON200.ConversationId.String()
		if l := listVars(t, chat, chatConv, client.ListConversationVariablesParams{User: ptr("u1")}); len(l.Data) != 0 || l.HasMore {
			t.Fatalf("chatbot variables: %+v", l)
		}
		r := putVar(t, chat, chatConv, varNickname, "u1", `"x"`)
		segErr(t, "chatbot PUT", r.StatusCode(), r.Body, 404, "not_found", "Conversation Variable Not Exists.")
	})
}
