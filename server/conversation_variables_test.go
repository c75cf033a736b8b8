package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/conversations"
	"github.com/parleyhq/parley/internal/store"
)

// varFixture is a server with one conversation of end user u1 holding conversation variables,
// stored as a Chatflow run leaves them.
type varFixture struct {
	*fixture
	conv string
}

func newVarFixture(t *testing.T) *varFixture {
	t.Helper()
	f := newFixture(t, ValidationEnforce)
	f.srv.conversations = conversations.New(f.st, nil, anonymous{f.st})
	ctx := t.Context()
	u, err := f.st.EndUser(ctx, f.appID, "u1")
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := f.st.StartConversation(ctx, store.Conversation{AppID: f.appID, EndUserID: u.ID},
		store.Message{AppID: f.appID, EndUserID: u.ID, Query: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now().Add(-time.Hour)
	vs := []store.ConversationVariable{
		{ID: "00000000-0000-4000-8000-00000000000a", Name: "zeta", ValueType: "string", Value: json.RawMessage(`"z"`)},
		{ID: "00000000-0000-4000-8000-00000000000b", Name: "alpha", ValueType: "number", Value: json.RawMessage(`1`)},
		{ID: "00000000-0000-4000-8000-00000000000c", Name: "Mixed.Case-1", ValueType: "object", Value: json.RawMessage(`{"b":1,"a":2}`)},
		{ID: "00000000-0000-4000-8000-00000000000d", Name: "list", ValueType: "array[string]", Value: json.RawMessage(`["x"]`)},
	}
	for i := range vs {
		vs[i].ConversationID, vs[i].CreatedAt = c.ID, created
	}
	if err := f.st.SaveConversationVariables(ctx, vs); err != nil {
		t.Fatal(err)
	}
	return &varFixture{fixture: f, conv: c.ID}
}

// anonymous resolves a request without a user to the shared anonymous end user, as the run
// engine does.
type anonymous struct{ st *store.Store }

func (a anonymous) EndUser(ctx context.Context, appID, user string) (store.EndUser, error) {
	if user == "" {
		user = conversations.AnonymousUser
	}
	return a.st.EndUser(ctx, appID, user)
}

func (f *varFixture) list(t *testing.T, query string) (int, []map[string]any, bool) {
	t.Helper()
	rec := f.do("GET", "/v1/conversations/"+f.conv+"/variables?"+query, f.appKey, "", "")
	if rec.Code != http.StatusOK {
		return rec.Code, nil, false
	}
	var page struct {
		Limit   int              `json:"limit"`
		HasMore bool             `json:"has_more"`
		Data    []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	return rec.Code, page.Data, page.HasMore
}

func names(vs []map[string]any) string {
	var out []string
	for _, v := range vs {
		out = append(out, v["name"].(string))
	}
	return strings.Join(out, " ")
}

// TestListConversationVariables: the stored variables of one conversation of the user, in a
// stable order (same creation time: by name), in pages, filtered by a case-insensitive part of
// the name; values as text.
func TestListConversationVariables(t *testing.T) {
	f := newVarFixture(t)
	st, all, more := f.list(t, "user=u1")
	if st != 200 || more || names(all) != "Mixed.Case-1 alpha list zeta" {
		t.Fatalf("list: %d %v %v", st, names(all), more)
	}
	for i, want := range []string{`{"b":1,"a":2}`, "1", `["x"]`, "z"} {
		if all[i]["value"] != want {
			t.Errorf("%s value %q, want %q", all[i]["name"], all[i]["value"], want)
		}
	}
	_, page, more := f.list(t, "user=u1&limit=3")
	_, rest, more2 := f.list(t, "user=u1&limit=3&last_id="+page[2]["id"].(string))
	if names(page) != "Mixed.Case-1 alpha list" || !more || names(rest) != "zeta" || more2 {
		t.Fatalf("pages: %s (%v) / %s (%v)", names(page), more, names(rest), more2)
	}
	for q, want := range map[string]string{"variable_name=A": "Mixed.Case-1 alpha zeta", "variable_name=case-": "Mixed.Case-1", "variable_name=nothing": ""} {
		if _, got, _ := f.list(t, "user=u1&"+q); names(got) != want {
			t.Errorf("%s: %q, want %q", q, names(got), want)
		}
	}
	for _, tc := range []struct {
		query, path string
		status      int
		code        string
	}{
		{"user=u2", "", 404, "not_found"},
		{"", "", 404, "not_found"},
		{"user=u1", "/v1/conversations/not-a-uuid/variables", 404, "not_found"},
		{"user=u1", "/v1/conversations/00000000-0000-4000-8000-0000000000ff/variables", 404, "not_found"},
		{"user=u1&limit=0", "", 400, "invalid_param"},
		{"user=u1&limit=101", "", 400, "invalid_param"},
		{"user=u1&last_id=00000000-0000-4000-8000-0000000000ff", "", 400, "invalid_param"},
		{"user=u1&variable_name=a%20b", "", 400, "invalid_param"},
		{"user=u1&variable_name=x--y", "", 400, "invalid_param"},
	} {
		path := tc.path
		if path == "" {
			path = "/v1/conversations/" + f.conv + "/variables"
		}
		rec := f.do("GET", path+"?"+tc.query, f.appKey, "", "")
		if rec.Code != tc.status {
			t.Errorf("%s %s: %d %s", path, tc.query, rec.Code, rec.Body)
			continue
		}
		if code, _ := decodeErr(t, rec); code != tc.code {
			t.Errorf("%s %s: code %s, want %s", path, tc.query, code, tc.code)
		}
	}
	if n := f.srv.Violations(); n != 0 {
		t.Fatalf("%d contract violations", n)
	}
}

// TestUpdateConversationVariable: a value of the variable's type is stored as JSON the Chatflow
// runner reads back; anything else is refused and changes nothing. The request validator hands
// handlers the value it validated, re-encoded, so object members come back sorted by name.
func TestUpdateConversationVariable(t *testing.T) {
	f := newVarFixture(t)
	put := func(id, body string) (int, map[string]any) {
		t.Helper()
		rec := f.do("PUT", "/v1/conversations/"+f.conv+"/variables/"+id, f.appKey, "application/json", body)
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("body %s: %v", rec.Body, err)
		}
		return rec.Code, out
	}
	const obj, num = "00000000-0000-4000-8000-00000000000c", "00000000-0000-4000-8000-00000000000b"
	for _, tc := range []struct {
		what, id, body string
		status         int
		code, msg      string
	}{
		{"string into number", num, `{"value":"1","user":"u1"}`, 400, "bad_request", "Type mismatch: variable 'alpha' expects number, but got string type"},
		{"float is a number, array is not", num, `{"value":[1.5],"user":"u1"}`, 400, "bad_request", "Type mismatch: variable 'alpha' expects number, but got array[number] type"},
		{"null", obj, `{"value":null,"user":"u1"}`, 400, "invalid_param", ""},
		{"value missing", obj, `{"user":"u1"}`, 400, "invalid_param", ""},
		{"nested too deeply", obj, `{"value":` + strings.Repeat("[", 1500) + strings.Repeat("]", 1500) + `,"user":"u1"}`, 400, "", ""},
		{"unknown variable", "00000000-0000-4000-8000-0000000000ff", `{"value":1,"user":"u1"}`, 404, "not_found", "Conversation Variable Not Exists."},
		{"another user", num, `{"value":1,"user":"u2"}`, 404, "not_found", "Conversation Not Exists."},
		{"no user", num, `{"value":1}`, 404, "not_found", "Conversation Not Exists."},
	} {
		st, e := put(tc.id, tc.body)
		if st != tc.status || (tc.code != "" && e["code"] != tc.code) || (tc.msg != "" && e["message"] != tc.msg) {
			t.Errorf("%s: %d %v", tc.what, st, e)
		}
	}
	_, before, _ := f.list(t, "user=u1")
	if before[0]["value"] != `{"b":1,"a":2}` || before[1]["value"] != "1" {
		t.Fatalf("refused updates changed values: %v", before)
	}

	st, got := put(obj, `{"value":{"z":{"y":[1,2.5,"s"]},"a":true},"user":"u1"}`)
	if st != 200 || got["value"] != `{"a":true,"z":{"y":[1,2.5,"s"]}}` || got["value_type"] != "object" || got["name"] != "Mixed.Case-1" {
		t.Fatalf("update object: %d %v", st, got)
	}
	if st, got = put(num, `{"value":2.5,"user":"u1"}`); st != 200 || got["value"] != "2.5" {
		t.Fatalf("update number: %d %v", st, got)
	}
	vs, err := f.st.ConversationVariables(t.Context(), f.conv)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Name == "Mixed.Case-1" && string(v.Value) != `{"a":true,"z":{"y":[1,2.5,"s"]}}` {
			t.Fatalf("stored %s", v.Value)
		}
	}
	if n := f.srv.Violations(); n != 0 {
		t.Fatalf("%d contract violations", n)
	}
}
