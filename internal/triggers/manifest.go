// Package triggers starts Workflow apps without a request to the API, as Dify's trigger nodes
// do (api/core/workflow/nodes/trigger_*, api/core/trigger, api/services/trigger): a webhook node
// gets a random id and a URL, /triggers/webhook/{id}, whose requests start a run once its
// manifest accepts them; a schedule node ticks on a cron expression (or Dify's visual
// schedule) in its time zone, each tick claimed once across replicas in the database. Each
// run is queued as a durable job, so an accepted request or a claimed tick is not lost with the
// replica that took it. Plugin triggers (events of third-party services, through Dify's plugin
// daemon) are refused at import. docs/triggers.md describes it all.
package triggers

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/workflow"
)

// Webhook methods and content types, as Dify's WebhookData declares them.
var (
	webhookMethods      = []string{"GET", "POST", "HEAD", "PATCH", "PUT", "DELETE"}
	webhookContentTypes = []string{ContentJSON, ContentFormData, ContentForm, ContentText, ContentBinary}
	// webhookTypes are the types a parameter may declare (Dify's _WEBHOOK_ALLOWED_TYPES).
	webhookTypes = []string{"string", "number", "boolean", "object", "array[string]", "array[number]", "array[boolean]",
		"array[object]", "file"}
)

// Content types of a webhook's requests.
const (
	ContentJSON     = "application/json"
	ContentFormData = "multipart/form-data"
	ContentForm     = "application/x-www-form-urlencoded"
	ContentText     = "text/plain"
	ContentBinary   = "application/octet-stream"
)

// MaxWebhooksPerWorkflow is how many webhook nodes a graph may have, Dify's
// MAX_WEBHOOK_NODES_PER_WORKFLOW.
const MaxWebhooksPerWorkflow = 5

// Param is a header, query parameter or body member a webhook's manifest declares.
type Param struct {
	Name     string
	Type     string
	Required bool
}

// Webhook is a trigger-webhook node's manifest: what its requests must be, and its reply.
type Webhook struct {
	NodeID string
	// Method is upper case (GET, POST, …); ContentType one of the Content* values.
	Method, ContentType string
	Headers, Params     []Param
	Body                []Param
	// StatusCode and ResponseBody are the reply to an accepted request.
	StatusCode   int
	ResponseBody string
}

// ParseWebhook reads a trigger-webhook node's data, with Dify's defaults (GET, JSON, status
// 200). Its error names the field at fault.
func ParseWebhook(nodeID string, data map[string]any) (*Webhook, error) {
	w := &Webhook{NodeID: nodeID, Method: "GET", ContentType: ContentJSON, StatusCode: 200}
	if v, ok := data["method"]; ok && v != nil {
		m, _ := v.(string)
		m = strings.ToUpper(strings.TrimSpace(m))
		if !slices.Contains(webhookMethods, m) {
			return nil, fmt.Errorf("method: %v is not one of %s", v, strings.Join(webhookMethods, ", "))
		}
		w.Method = m
	}
	if v, ok := data["content_type"]; ok && v != nil {
		ct, _ := v.(string)
		ct = strings.ToLower(strings.TrimSpace(ct))
		if !slices.Contains(webhookContentTypes, ct) {
			return nil, fmt.Errorf("content_type: %v is not one of %s", v, strings.Join(webhookContentTypes, ", "))
		}
		w.ContentType = ct
	}
	var err error
	if w.Headers, err = params(data, "headers"); err != nil {
		return nil, err
	}
	if w.Params, err = params(data, "params"); err != nil {
		return nil, err
	}
	if w.Body, err = params(data, "body"); err != nil {
		return nil, err
	}
	for i, p := range w.Params {
		if !slices.Contains([]string{"string", "number", "boolean"}, p.Type) {
			// Dify converts query values from their text; other types always fail.
			return nil, fmt.Errorf("params[%d] (%s): a query parameter is a string, a number or a boolean, not %s", i, p.Name, p.Type)
		}
	}
	if v, ok := data["status_code"]; ok && v != nil {
		code, ok := intOf(v)
		if !ok || code < 200 || code > 399 {
			// Dify's editor allows 200 to 399: the reply of an accepted request is a success.
			return nil, fmt.Errorf("status_code: %v is not an HTTP status from 200 to 399", v)
		}
		w.StatusCode = code
	}
	if v, ok := data["response_body"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("response_body: a text, not %T", v)
		}
		w.ResponseBody = s
	}
	return w, nil
}

func params(data map[string]any, key string) ([]Param, error) {
	v, ok := data[key]
	if !ok || v == nil {
		return nil, nil
	}
	l, ok := v.([]any)
	if !ok {
		// Exports written by hand sometimes give a mapping; Dify's manifest is a list.
		return nil, fmt.Errorf("%s: a list of {name, type, required}, not %T", key, v)
	}
	var out []Param
	seen := map[string]bool{}
	for i, item := range l {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: a mapping {name, type, required}, not %T", key, i, item)
		}
		name, _ := m["name"].(string)
		if strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("%s[%d]: no name", key, i)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s[%d]: %q is declared twice", key, i, name)
		}
		seen[name] = true
		p := Param{Name: name, Type: "string"}
		if t, ok := m["type"].(string); ok && t != "" {
			p.Type = t
		}
		if !slices.Contains(webhookTypes, p.Type) {
			return nil, fmt.Errorf("%s[%d] (%s): type %q is not one of %s", key, i, name, p.Type, strings.Join(webhookTypes, ", "))
		}
		if r, ok := m["required"].(bool); ok {
			p.Required = r
		}
		out = append(out, p)
	}
	return out, nil
}

func intOf(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1e9 {
			return int(n), true
		}
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(n))
		return i, err == nil
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// Reply is a webhook's answer to an accepted request, as Dify's
// WebhookService.generate_webhook_response builds it: the configured status, and the configured
// body as JSON when it reads as a JSON object or array, else {"message": body}; without a body,
// {"status": "success", "message": "Webhook processed successfully"}.
func (w *Webhook) Reply() (int, any) {
	body := w.ResponseBody
	if body == "" {
		return w.StatusCode, map[string]any{"status": "success", "message": "Webhook processed successfully"}
	}
	if t := strings.TrimSpace(body); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		var v any
		if err := json.Unmarshal([]byte(t), &v); err == nil {
			return w.StatusCode, v
		}
	}
	return w.StatusCode, map[string]any{"message": body}
}

// Plugin is a trigger-plugin node: an event of a Dify plugin's provider.
type Plugin struct {
	PluginID, ProviderID, EventName string
}

// ParsePlugin reads what a trigger-plugin node names.
func ParsePlugin(data map[string]any) Plugin {
	s := func(k string) string { v, _ := data[k].(string); return v }
	return Plugin{PluginID: s("plugin_id"), ProviderID: s("provider_id"), EventName: s("event_name")}
}

// Refusal is why a plugin trigger is not imported. Parley has no plugin daemon to subscribe to
// a third-party service's events, and no built-in trigger that stands for one: the webhook
// trigger is the nearest (a service that can post its events to a URL can call a webhook
// node), but what a plugin adds — registering the subscription with the service, checking the
// service's signatures, turning its payload into the event's variables — cannot be read off
// the node.
func (p Plugin) Refusal() string {
	name := p.PluginID
	if name == "" {
		name = p.ProviderID
	}
	if name == "" {
		name = "(the node names no plugin)"
	}
	event := ""
	if p.EventName != "" {
		event = fmt.Sprintf(" (event %q)", p.EventName)
	}
	return fmt.Sprintf("plugin trigger %s%s is not supported: Parley runs no Dify plugins, and has no built-in trigger for "+
		"that service's events; replace the node with a trigger-webhook node and point the service's webhook at its URL",
		name, event)
}

// Kind is a trigger node's kind as Parley lists it ("webhook", "schedule"), "" for other nodes
// (plugin triggers are never stored).
func Kind(nodeType string) string {
	switch nodeType {
	case workflow.TypeTriggerWebhook:
		return "webhook"
	case workflow.TypeTriggerSchedule:
		return "schedule"
	}
	return ""
}

// Check lists what is wrong with the trigger nodes of a Workflow app's graph, by node id: a
// manifest or schedule that cannot work, a plugin trigger, more webhooks than Dify allows. An
// import refuses the file with them.
func Check(g *workflow.Graph) map[string]string {
	out := map[string]string{}
	webhooks := 0
	for _, id := range g.Triggers {
		n := g.Nodes[id]
		switch n.Type {
		case workflow.TypeTriggerWebhook:
			webhooks++
			if _, err := ParseWebhook(id, n.Data); err != nil {
				out[id] = "webhook trigger: " + err.Error()
			} else if webhooks > MaxWebhooksPerWorkflow {
				out[id] = fmt.Sprintf("the graph has more than %d webhook triggers, as many as Dify allows", MaxWebhooksPerWorkflow)
			}
		case workflow.TypeTriggerSchedule:
			if _, err := ParseSchedule(id, n.Data); err != nil {
				out[id] = "schedule trigger: " + err.Error()
			}
		case workflow.TypeTriggerPlugin:
			out[id] = ParsePlugin(n.Data).Refusal()
		}
	}
	return out
}
