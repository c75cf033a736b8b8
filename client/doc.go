// Package client is the Go client of the Parley Service API. The Client, the request and
// response types and one method per operation are generated from api/openapi.yaml
// (client.gen.go); New and WithAPIKey (new.go) and the stream readers (stream.go) are
// hand-written.
//
// Start with New, which takes the server's address with or without /v1, and WithAPIKey, which
// sends a key with every request:
//
//	c, err := client.New("http://127.0.0.1:5001", client.WithAPIKey(key))
//	if err != nil { … }
//	resp, err := c.SendChatMessageWithResponse(ctx, client.SendChatMessageJSONRequestBody{
//		Query: "Hello", User: "user-1", Inputs: map[string]any{},
//	})
//	if err != nil { … }
//	if resp.JSON200 == nil { … } // an error reply: resp.StatusCode(), resp.Body
//	fmt.Println(resp.JSON200.Answer)
//
// Every operation comes in two forms. XxxWithResponse reads the reply: JSON200 (JSON201 for the
// few operations that create with 201) holds the decoded body of a success, the other JSONnnn
// fields the Error body of a failure, and StatusCode and Body the raw reply. Xxx returns the
// *http.Response as it is, which is what a streamed reply needs: pass the reply of a request
// with `response_mode: streaming` to NewEventStream, NewCompletionEventStream or
// NewWorkflowEventStream.
//
// A key reaches one app (an app key, from `parley keys create --app NAME`) or the knowledge
// bases of the workspace (a knowledge key, from `parley keys create --knowledge`); make one
// client per key.
//
// The examples, in example_test.go (`go doc -http` shows them), cover a blocking chat, a
// streamed chat, a Workflow app's run and a knowledge-base search; `go test` runs them against a
// real server.
package client
