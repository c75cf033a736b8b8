// Package toolregtest starts loopback servers for the tests of registered tools: an HTTP API
// with its OpenAPI document, and an MCP server built with the official SDK. Both are real
// servers on 127.0.0.1, with endpoints that fail on purpose.
package toolregtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// APIToken is the bearer token the API wants.
const APIToken = "s3cret-token"

// ChartPNG returns the image the chart tools answer: a small, real PNG, the same every time.
func ChartPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 0, color.RGBA{G: 180, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// API is a loopback inventory API:
//
//	GET /items/{id}  getItem: {"id": …, "name": "widget", "tenant": <X-Tenant>}; 401 without the token
//	GET /chart       getChart: ChartPNG as image/png
//	GET /broken      broken: HTTP 500 "database down"
//	GET /slow        slow: answers only when the request ends
type API struct {
	*httptest.Server
	// Document is the API's OpenAPI 3 document, its server the loopback URL.
	Document string
	// Calls counts the requests.
	Calls atomic.Int64
}

// NewAPI starts the API; it stops when tb ends.
func NewAPI(tb testing.TB) *API {
	tb.Helper()
	a := &API{}
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+APIToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"id": r.PathValue("id"), "name": "widget", "tenant": r.Header.Get("X-Tenant")})
	})
	mux.HandleFunc("GET /chart", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(ChartPNG())
	})
	mux.HandleFunc("GET /broken", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "database down", http.StatusInternalServerError)
	})
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.Calls.Add(1)
		mux.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() {
		close(release)
		a.Close()
	})
	a.Document = fmt.Sprintf(apiDocument, a.URL)
	return a
}

const apiDocument = `openapi: 3.0.3
info: {title: Inventory, version: "1"}
servers:
  - url: %s
paths:
  /items/{id}:
    get:
      operationId: getItem
      summary: Look an item up by id.
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses: {"200": {description: the item}}
  /chart:
    get:
      operationId: getChart
      summary: Draws the stock chart.
      responses: {"200": {description: the chart, content: {image/png: {}}}}
  /broken:
    get:
      operationId: broken
      summary: Always fails.
      responses: {"500": {description: failure}}
  /slow:
    get:
      operationId: slow
      summary: Never answers in time.
      responses: {"200": {description: late}}
`

// MCPToolSearch is the MCP server's search tool: its name has a dot, which model APIs refuse.
const MCPToolSearch = "notes.search"

// MCP is a loopback MCP server (Streamable HTTP; at /sse, the older HTTP+SSE transport) with
// the tools
//
//	notes.search  {"query": …} → "found: <query>"
//	chart         the text "the chart" and ChartPNG as an image
//	hang          answers only when the request ends
//	stats         {"query": …} → structured content {"query": <QUERY>, "hits": len(query)} under
//	              its output schema (and the same object as JSON text)
type MCP struct {
	*httptest.Server
	// Auth is the Authorization header of the last request.
	Auth atomic.Value
}

type searchIn struct {
	Query string `json:"query" jsonschema:"what to look for"`
}

// statsOut is the declared output of the stats tool.
type statsOut struct {
	Query string `json:"query"`
	Hits  int    `json:"hits"`
}

// NewMCP starts the MCP server; it stops when tb ends (or earlier, with Close).
func NewMCP(tb testing.TB) *MCP {
	tb.Helper()
	m := &MCP{}
	release := make(chan struct{})
	s := sdk.NewServer(&sdk.Implementation{Name: "notes", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: MCPToolSearch, Title: "Search notes", Description: "Searches the notes."},
		func(_ context.Context, _ *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found: " + strings.ToUpper(in.Query)}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "stats", Description: "Counts the notes that match."},
		func(_ context.Context, _ *sdk.CallToolRequest, in searchIn) (*sdk.CallToolResult, statsOut, error) {
			return nil, statsOut{Query: strings.ToUpper(in.Query), Hits: len(in.Query)}, nil
		})
	s.AddTool(&sdk.Tool{Name: "chart", Description: "Draws the notes chart.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the chart"},
				&sdk.ImageContent{MIMEType: "image/png", Data: ChartPNG()}}}, nil
		})
	s.AddTool(&sdk.Tool{Name: "hang", Description: "Never answers in time.", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			select {
			case <-ctx.Done():
			case <-release:
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	sse := sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil)
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.Auth.Store(r.Header.Get("Authorization"))
		if strings.HasPrefix(r.URL.Path, "/sse") {
			// The older HTTP+SSE transport, where most servers of Dify exports are.
			sse.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	tb.Cleanup(func() {
		close(release)
		m.Close()
	})
	return m
}
