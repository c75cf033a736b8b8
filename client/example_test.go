package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/parleyhq/parley/client"
)

// A blocking chat: one request, the whole answer in the reply. baseURL is the server's address
// (http://127.0.0.1:5001, with or without /v1) and appKey a key of a chat app, as
// `parley keys create --app NAME` prints it.
func ExampleNew() {
	c, err := client.New(baseURL, client.WithAPIKey(appKey))
	if err != nil {
		log.Fatal(err)
	}
	resp, err := c.SendChatMessageWithResponse(context.Background(), nil, client.SendChatMessageJSONRequestBody{
		Query:  "What is Parley?",
		User:   "user-1",
		Inputs: map[string]any{},
	})
	if err != nil {
		log.Fatal(err)
	}
	if resp.JSON200 == nil { // an error reply: its status and Error body
		log.Fatalf("HTTP %d: %s", resp.StatusCode(), resp.Body)
	}
	fmt.Println(resp.JSON200.Answer)
	// Output: Parley is an LLM application server.
}

// A streamed chat: the answer arrives in pieces as `message` events, read with the event reader.
func ExampleNewEventStream() {
	c, err := client.New(baseURL, client.WithAPIKey(appKey))
	if err != nil {
		log.Fatal(err)
	}
	mode := client.Streaming
	resp, err := c.SendChatMessage(context.Background(), nil, client.SendChatMessageJSONRequestBody{
		Query:        "Say hello in three words.",
		User:         "user-1",
		Inputs:       map[string]any{},
		ResponseMode: &mode,
	})
	if err != nil {
		log.Fatal(err)
	}
	stream, err := client.NewEventStream(resp) // an error reply is a *client.ResponseError
	if err != nil {
		log.Fatal(err)
	}
	defer stream.Close()
	for stream.Next() {
		ev := stream.Event()
		switch name, _ := ev.Discriminator(); name {
		case "message":
			m, _ := ev.AsMessageEvent()
			fmt.Print(m.Answer)
		case "message_end":
			fmt.Println()
		case "error":
			e, _ := ev.AsErrorEvent()
			log.Fatalf("%s: %s", e.Code, e.Message)
		}
	}
	if err := stream.Err(); err != nil {
		log.Fatal(err)
	}
	// Output: Hello there, friend.
}

// A run of a Workflow app (docs/examples/workflow-basic.yml, imported with
// `parley apps import --publish`): the inputs of its start node in, the outputs of its end node
// out. workflowKey is a key of that app.
func ExampleClientWithResponses_RunWorkflowWithResponse() {
	c, err := client.New(baseURL, client.WithAPIKey(workflowKey))
	if err != nil {
		log.Fatal(err)
	}
	resp, err := c.RunWorkflowWithResponse(context.Background(), nil, client.RunWorkflowJSONRequestBody{
		Inputs: map[string]any{"topic": "tides"},
		User:   "user-1",
	})
	if err != nil {
		log.Fatal(err)
	}
	if resp.JSON200 == nil {
		log.Fatalf("HTTP %d: %s", resp.StatusCode(), resp.Body)
	}
	run := resp.JSON200.Data
	fmt.Println(run.Status)
	fmt.Println((*run.Outputs)["heading"])
	fmt.Println((*run.Outputs)["text"])
	// Output:
	// succeeded
	// # TIDES
	// Tides rise and fall twice a day.
}

// A knowledge-base search: create a knowledge base, add a document from text, wait until it is
// indexed, and retrieve the chunks that match a query. knowledgeKey is a knowledge-base key, as
// `parley keys create --knowledge` prints it.
func ExampleClientWithResponses_RetrieveWithResponse() {
	ctx := context.Background()
	c, err := client.New(baseURL, client.WithAPIKey(knowledgeKey))
	if err != nil {
		log.Fatal(err)
	}
	kb, err := c.CreateDatasetWithResponse(ctx, client.CreateDatasetJSONRequestBody{Name: "Handbook"})
	if err != nil || kb.JSON200 == nil {
		log.Fatalf("create knowledge base: %v %s", err, kb.Body)
	}
	id := kb.JSON200.Id.String()
	defer c.DeleteDatasetWithResponse(ctx, id)

	technique := client.HighQuality
	doc, err := c.CreateDocumentByTextWithResponse(ctx, id, nil, client.CreateDocumentByTextJSONRequestBody{
		Name:              "Refunds",
		Text:              "Refunds are paid within 14 days of a return.",
		IndexingTechnique: &technique,
		ProcessRule:       &client.ProcessRule{Mode: "automatic"},
	})
	if err != nil || doc.JSON200 == nil {
		log.Fatalf("add document: %v %s", err, doc.Body)
	}
	for { // indexing runs in the background
		st, err := c.GetDocumentIndexingStatusWithResponse(ctx, id, doc.JSON200.Batch)
		if err != nil || st.JSON200 == nil {
			log.Fatalf("indexing status: %v %s", err, st.Body)
		}
		if s := st.JSON200.Data[0].IndexingStatus; s == client.IndexingStatusCompleted {
			break
		} else if s == client.IndexingStatusError {
			log.Fatalf("indexing failed: %v", *st.JSON200.Data[0].Error)
		}
		time.Sleep(100 * time.Millisecond)
	}

	query := "How long do refunds take?"
	found, err := c.RetrieveWithResponse(ctx, id, client.RetrieveJSONRequestBody{Query: &query})
	if err != nil || found.JSON200 == nil {
		log.Fatalf("retrieve: %v %s", err, found.Body)
	}
	for _, r := range found.JSON200.Records {
		fmt.Printf("%s: %s\n", r.Segment.Document.Name, r.Segment.Content)
	}
	// Output: Refunds: Refunds are paid within 14 days of a return.
}
