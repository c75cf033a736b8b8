package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/tools"
)

// call looks a tool up in s and invokes it with the model's args.
func call(t *testing.T, s *Set, provider, name string, configured map[string]any, args string) tools.Result {
	t.Helper()
	tool, err := s.Lookup(provider, name, configured)
	if err != nil {
		t.Fatalf("Lookup(%s, %s): %v", provider, name, err)
	}
	res, err := tool.Invoke(t.Context(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s/%s Invoke(%s): %v", provider, name, args, err)
	}
	return res
}

func wantText(t *testing.T, res tools.Result, want string) {
	t.Helper()
	if res.IsError || res.Text != want {
		t.Errorf("result = %q (IsError %v), want %q", res.Text, res.IsError, want)
	}
}

func wantError(t *testing.T, res tools.Result, contains string) {
	t.Helper()
	if !res.IsError || !strings.Contains(res.Text, contains) {
		t.Errorf("result = %q (IsError %v), want an error containing %q", res.Text, res.IsError, contains)
	}
}

func TestLookupAndAll(t *testing.T) {
	t.Parallel()
	want := map[string]bool{
		"time/current_time": true, "time/weekday": true, "time/timezone_conversion": true,
		"time/localtime_to_timestamp": true, "time/timestamp_to_localtime": true,
		"maths/eval_expression": true,
		"json_process/parse":    true, "json_process/insert": true, "json_process/replace": true, "json_process/delete": true,
		"webscraper/webscraper": true,
	}
	all := All()
	if len(all) != len(want) {
		t.Errorf("All() has %d tools, want %d", len(all), len(want))
	}
	for _, tool := range all {
		id := tool.Identity()
		if !want[id.Provider+"/"+id.Name] {
			t.Errorf("unexpected tool %s/%s", id.Provider, id.Name)
		}
		if id.Label["en_US"] == "" || tool.Description() == "" {
			t.Errorf("%s/%s has no label or description", id.Provider, id.Name)
		}
		var sch struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tool.Parameters(), &sch); err != nil || sch.Type != "object" {
			t.Errorf("%s/%s parameters %s: %v", id.Provider, id.Name, tool.Parameters(), err)
		}
		for _, r := range sch.Required {
			if _, ok := sch.Properties[r]; !ok {
				t.Errorf("%s/%s requires undeclared %s", id.Provider, id.Name, r)
			}
		}
	}
	if _, err := Lookup("time", "nope", nil); !errors.Is(err, tools.ErrUnknownTool) {
		t.Errorf("Lookup(time, nope) err = %v, want ErrUnknownTool", err)
	}
	if _, err := Lookup("evil/json_process/json_process", "parse", nil); !errors.Is(err, tools.ErrUnknownTool) {
		t.Errorf("a third-party plugin id resolved to a built-in: %v", err)
	}
	tool, err := Lookup("langgenius/json_process/json_process", "parse", nil)
	if err != nil || tool.Identity().Provider != "json_process" {
		t.Errorf("plugin id spelling: %v, %v", tool, err)
	}
}

func TestInvokeArguments(t *testing.T) {
	t.Parallel()
	s := New(Options{Now: func() time.Time { return time.Date(2024, 3, 1, 12, 30, 0, 0, time.UTC) }})
	for _, bad := range []string{`[1]`, `"x"`, `{`, `{} {}`, `null`} {
		wantError(t, call(t, s, "time", "current_time", nil, bad), "bad arguments")
	}
	// The app's values apply; the model's win; "" in the app's values counts as unset.
	conf := map[string]any{"format": "%Y-%m-%d %H:%M", "timezone": "Asia/Shanghai"}
	wantText(t, call(t, s, "time", "current_time", conf, `{}`), "2024-03-01 20:30")
	wantText(t, call(t, s, "time", "current_time", conf, ``), "2024-03-01 20:30")
	wantText(t, call(t, s, "time", "current_time", conf, `{"timezone":"America/New_York"}`), "2024-03-01 07:30")
	wantText(t, call(t, s, "time", "current_time", map[string]any{"format": "", "timezone": ""}, `{}`), "2024-03-01 12:30:00 UTC")

	tool, err := s.Lookup("time", "current_time", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := tool.Invoke(ctx, json.RawMessage(`{}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Invoke err = %v", err)
	}
}

func TestTimeTools(t *testing.T) {
	t.Parallel()
	s := New(Options{Now: func() time.Time { return time.Date(2024, 12, 31, 23, 0, 0, 0, time.UTC) }})
	wantText(t, call(t, s, "time", "current_time", nil, `{"format":"%A %d %B %Y","timezone":"Asia/Tokyo"}`), "Wednesday 01 January 2025")
	wantError(t, call(t, s, "time", "current_time", nil, `{"timezone":"Mars/Olympus"}`), "unknown time zone")
	wantError(t, call(t, s, "time", "current_time", nil, `{"timezone":"Local"}`), "unknown time zone")
	wantError(t, call(t, s, "time", "current_time", nil, `{"timezone":"../../etc/passwd"}`), "unknown time zone")
	wantError(t, call(t, s, "time", "current_time", nil, `{"format":"`+strings.Repeat("%Y", 200)+`"}`), "format")

	wantText(t, call(t, s, "time", "weekday", nil, `{"year":2024,"month":2,"day":29}`), "February 29, 2024 is Thursday.")
	wantText(t, call(t, s, "time", "weekday", nil, `{"year":"2024","month":"7","day":"4"}`), "July 4, 2024 is Thursday.")
	wantError(t, call(t, s, "time", "weekday", nil, `{"year":2023,"month":2,"day":29}`), "not a valid date")
	wantError(t, call(t, s, "time", "weekday", nil, `{"year":2023,"month":13,"day":1}`), "not a valid date")
	wantError(t, call(t, s, "time", "weekday", nil, `{"year":2023,"month":1}`), "day is required")
	wantError(t, call(t, s, "time", "weekday", nil, `{"year":2023.5,"month":1,"day":1}`), "integer")

	wantText(t, call(t, s, "time", "timezone_conversion", nil,
		`{"current_time":"2024-06-01 12:00:00","current_timezone":"Europe/Paris","target_timezone":"Asia/Kolkata"}`), "2024-06-01 15:30:00")
	wantError(t, call(t, s, "time", "timezone_conversion", nil,
		`{"current_time":"June 1st","current_timezone":"UTC","target_timezone":"UTC"}`), "YYYY-MM-DD")

	wantText(t, call(t, s, "time", "localtime_to_timestamp", nil, `{"localtime":"2024-01-01 08:00:00"}`), "1704067200")
	wantText(t, call(t, s, "time", "localtime_to_timestamp", nil, `{"localtime":"2024-01-01 00:00:00","timezone":"UTC"}`), "1704067200")
	wantText(t, call(t, s, "time", "timestamp_to_localtime", nil, `{"timestamp":1704067200}`), "2024-01-01 08:00:00")
	wantText(t, call(t, s, "time", "timestamp_to_localtime", nil, `{"timestamp":"1704067200","timezone":"UTC"}`), "2024-01-01 00:00:00")
	wantError(t, call(t, s, "time", "timestamp_to_localtime", nil, `{"timestamp":99999999999999999}`), "out of range")
	wantError(t, call(t, s, "time", "timestamp_to_localtime", nil, `{"timestamp":"soon"}`), "integer")
}

// TestFind: a reference finds a built-in tool by provider id or name, under the builtin and
// plugin provider types; other types are not built-in tools.
func TestFind(t *testing.T) {
	ctx := context.Background()
	for _, ref := range []tools.Ref{
		{Name: "current_time", ProviderID: "time"},
		{Type: tools.TypeBuiltin, Name: "current_time", ProviderName: "time"},
		{Type: tools.TypePlugin, Name: "current_time", ProviderID: "langgenius/time/time"},
	} {
		if _, err := Find(ctx, ref); err != nil {
			t.Errorf("Find(%+v): %v", ref, err)
		}
	}
	for _, ref := range []tools.Ref{
		{Type: tools.TypeAPI, Name: "current_time", ProviderID: "time"},
		{Type: tools.TypeMCP, Name: "current_time", ProviderID: "time"},
		{Type: tools.TypeBuiltin, Name: "nope", ProviderID: "time"},
	} {
		if _, err := Find(ctx, ref); !errors.Is(err, tools.ErrUnknownTool) {
			t.Errorf("Find(%+v) = %v, want ErrUnknownTool", ref, err)
		}
	}
}
