package nodes

import (
	"context"
	"strings"

	"github.com/parleyhq/parley/internal/workflow"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// The trigger nodes are the entries of a Workflow app that starts itself (internal/triggers
// fires them). Like the start node they hand the run's inputs to the nodes after them, with the
// system variables as "sys.<name>"; the run's inputs are what the trigger put there.

// Inputs of a webhook's run, as Dify's WebhookService.build_workflow_inputs names them: the
// request as it was read (method, headers, query_params, body, files), and its parts.
const (
	WebhookData        = "webhook_data"
	WebhookHeaders     = "webhook_headers"
	WebhookQueryParams = "webhook_query_params"
	WebhookBody        = "webhook_body"
)

// webhookTrigger is a trigger-webhook node: its outputs are the headers, query parameters and
// body members its manifest declares (a header's name with "-" as "_"), and the request whole
// as _webhook_raw, as Dify's TriggerWebhookNode outputs them.
type webhookTrigger struct {
	contentType           string
	headers, params, body []webhookParam
}

type webhookParam struct{ name, typ string }

func newWebhookTrigger(n *workflow.Node) (workflow.NodeRunner, error) {
	w := &webhookTrigger{contentType: strings.ToLower(str(n.Data["content_type"]))}
	if w.contentType == "" {
		w.contentType = "application/json"
	}
	read := func(key string) []webhookParam {
		var out []webhookParam
		for _, p := range list(n.Data[key]) {
			m := mapping(p)
			if name := str(m["name"]); name != "" {
				out = append(out, webhookParam{name: name, typ: str(m["type"])})
			}
		}
		return out
	}
	w.headers, w.params, w.body = read("headers"), read("params"), read("body")
	return w, nil
}

func (w *webhookTrigger) Run(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
	in := env(x).Inputs
	data, _ := in[WebhookData].(map[string]any)
	part := func(key string) map[string]any {
		m, _ := data[key].(map[string]any)
		return m
	}
	out := map[string]any{}
	headers := part("headers")
	for _, h := range w.headers {
		out[strings.ReplaceAll(h.name, "-", "_")] = fromGo(headerValue(headers, h.name))
	}
	query := part("query_params")
	for _, p := range w.params {
		out[p.name] = fromGo(query[p.name])
	}
	body, files := part("body"), part("files")
	for _, b := range w.body {
		switch {
		case w.contentType == "text/plain":
			raw, _ := body["raw"].(string)
			out[b.name] = raw
		case w.contentType == "application/octet-stream":
			out[b.name] = fileValue(body["raw"])
		case b.typ == "file":
			out[b.name] = fileValue(files[b.name])
		default:
			out[b.name] = fromGo(body[b.name])
		}
	}
	out["_webhook_raw"] = fromGo(data)
	inputs := make(map[string]any, len(in)+8)
	for k, v := range in {
		inputs[k] = fromGo(v)
	}
	for k, v := range x.Pool.Scope(workflow.ScopeSys) {
		out["sys."+k] = v
		inputs["sys."+k] = v
	}
	return workflow.Result{Inputs: inputs, Outputs: out}, nil
}

// headerValue finds a header by its declared name: as given, with "-" and "_" swapped, then
// ignoring case, as Dify's node looks headers up.
func headerValue(headers map[string]any, name string) any {
	alt := strings.ReplaceAll(name, "-", "_")
	if strings.Contains(name, "_") && !strings.Contains(name, "-") {
		alt = strings.ReplaceAll(name, "_", "-")
	}
	for _, k := range []string{name, alt} {
		if v, ok := headers[k]; ok {
			return v
		}
	}
	for k, v := range headers {
		if strings.EqualFold(k, name) || strings.EqualFold(k, alt) {
			return v
		}
	}
	return nil
}

// fileValue is a file of the request (Dify's file dict, as the trigger stored it) as the
// variable pool holds it; nil when there is none.
func fileValue(v any) any {
	switch f := fromGo(v).(type) {
	case *value.File:
		return f
	case *value.Object:
		if file, ok := value.FileFromObject(f); ok {
			return file
		}
		return f
	}
	return nil
}

// scheduleTrigger is a trigger-schedule node: its outputs are the run's inputs (current_time,
// the tick in the schedule's time zone), as Dify's TriggerScheduleNode outputs them.
type scheduleTrigger struct{}

func newScheduleTrigger(*workflow.Node) (workflow.NodeRunner, error) { return scheduleTrigger{}, nil }

func (scheduleTrigger) Run(_ context.Context, x *workflow.Exec) (workflow.Result, error) {
	in := env(x).Inputs
	out := make(map[string]any, len(in)+8)
	for k, v := range in {
		out[k] = fromGo(v)
	}
	for k, v := range x.Pool.Scope(workflow.ScopeSys) {
		out["sys."+k] = v
	}
	return workflow.Result{Inputs: out, Outputs: out}, nil
}
