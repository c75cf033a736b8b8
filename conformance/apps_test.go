package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/parleyhq/parley/client"
)

// TestAppEndpoints reads the chatbot app's parameters, info and meta through the generated
// client, as the SDKs do (with ?user=, which Dify ignores).
func TestAppEndpoints(t *testing.T) {
	forEachServer(t, func(t *testing.T, p *Parley) {
		c := newClient(t, p, p.AppKey)
		ctx := context.Background()
		user := "abc-123"

		params, err := c.GetAppParametersWithResponse(ctx, &client.GetAppParametersParams{User: &user})
		if err != nil {
			t.Fatal(err)
		}
		if params.StatusCode() != http.StatusOK {
			t.Fatalf("parameters: %d %s", params.StatusCode(), params.Body)
		}
		var got map[string]any
		if err := json.Unmarshal(params.Body, &got); err != nil {
			t.Fatal(err)
		}
		wantForm := []any{
			map[string]any{"text-input": map[string]any{"label": "Your name", "variable": "name", "required": false, "max_length": float64(20), "default": "", "hide": false}},
			map[string]any{"select": map[string]any{"label": "tone", "variable": "tone", "required": true, "options": []any{"warm", "dry"}, "default": "", "hide": false}},
		}
		if !reflect.DeepEqual(got["user_input_form"], wantForm) {
			t.Errorf("user_input_form = %#v", got["user_input_form"])
		}
		if got["opening_statement"] != "Hello from the conformance bot." {
			t.Errorf("opening_statement = %v", got["opening_statement"])
		}
		if !reflect.DeepEqual(got["system_parameters"], map[string]any{"file_size_limit": float64(15), "image_file_size_limit": float64(2),
			"audio_file_size_limit": float64(20), "video_file_size_limit": float64(20), "workflow_file_upload_limit": float64(10)}) {
			t.Errorf("system_parameters = %v", got["system_parameters"])
		}

		info, err := c.GetAppInfoWithResponse(ctx, &client.GetAppInfoParams{User: &user})
		if err != nil {
			t.Fatal(err)
		}
		if info.JSON200 == nil || info.JSON200.Name != "chatbot" || info.JSON200.Mode != client.AppInfoModeChat || info.JSON200.AuthorName != "Conformance" {
			t.Fatalf("info: %d %s", info.StatusCode(), info.Body)
		}
		meta, err := c.GetAppMetaWithResponse(ctx, &client.GetAppMetaParams{})
		if err != nil {
			t.Fatal(err)
		}
		if meta.JSON200 == nil || len(meta.JSON200.ToolIcons) != 0 {
			t.Fatalf("meta: %d %s", meta.StatusCode(), meta.Body)
		}
		// The Python SDK sends unset arguments as empty values.
		raw, e := p.do(t, newContractClient(t), call{method: "GET", path: "/parameters?user=", key: "Bearer " + p.AppKey})
		if raw.StatusCode != http.StatusOK {
			t.Fatalf("empty user value: %d %+v", raw.StatusCode, e)
		}
		// A knowledge key is no app key.
		raw, e = p.do(t, newContractClient(t), call{method: "GET", path: "/parameters", key: "Bearer " + p.KnowledgeKey})
		if raw.StatusCode != http.StatusUnauthorized || e.Code != "unauthorized" {
			t.Fatalf("knowledge key on /parameters: %d %+v", raw.StatusCode, e)
		}
	})
}
