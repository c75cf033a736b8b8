package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/chat"
	"github.com/parleyhq/parley/internal/models"
	"github.com/parleyhq/parley/internal/sse"
	"github.com/parleyhq/parley/internal/store"
)

// SendChatMessage answers POST /chat-messages, blocking or streaming.
func (s *Server) SendChatMessage(ctx context.Context, req gen.SendChatMessageRequestObject) (gen.SendChatMessageResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	streaming := b.ResponseMode != nil && *b.ResponseMode == gen.Streaming
	creq := chat.Request{
		App: app, User: b.User, Query: b.Query, Inputs: b.Inputs, Streaming: streaming,
		AutoGenerateName: b.AutoGenerateName == nil || *b.AutoGenerateName,
	}
	if b.ConversationId != nil {
		creq.ConversationID = *b.ConversationId
	}
	if b.Files != nil {
		for _, f := range *b.Files {
			cf := chat.File{Type: string(f.Type), TransferMethod: string(f.TransferMethod)}
			if f.Url != nil {
				cf.URL = *f.Url
			}
			if f.UploadFileId != nil {
				cf.UploadFileID = *f.UploadFileId
			}
			creq.Files = append(creq.Files, cf)
		}
	}
	run, err := s.chat.Send(ctx, creq)
	if err != nil {
		return nil, domainError(err)
	}
	if streaming {
		return &chatStream{ctx: ctx, run: run, ping: s.pingInterval, srv: s}, nil
	}
	return blockingReply(ctx, run)
}

// blockingReply waits for the whole answer. A client that goes away detaches from the run,
// which still finishes and is stored.
func blockingReply(ctx context.Context, run *chat.Run) (gen.SendChatMessageResponseObject, error) {
	var answer []byte
	for {
		select {
		case <-ctx.Done():
			run.Detach()
			return nil, ctx.Err()
		case ev, ok := <-run.Events():
			if !ok {
				return nil, errInternal(errors.New("run ended without a final event"))
			}
			switch ev.Kind {
			case chat.EventMessage:
				answer = append(answer, ev.Answer...)
			case chat.EventError:
				return nil, domainError(ev.Err)
			case chat.EventMessageEnd:
				return gen.SendChatMessage200JSONResponse{
					Event: gen.ChatCompletionResponseEventMessage, Id: mustUUID(run.MessageID),
					MessageId: mustUUID(run.MessageID), ConversationId: mustUUID(run.ConversationID),
					TaskId: mustUUID(run.TaskID), Mode: gen.AppMode(run.Mode), Answer: string(answer),
					CreatedAt: run.CreatedAt.Unix(),
					Metadata:  gen.ResponseMetadata{Usage: genUsage(*ev.Usage), RetrieverResources: genResources(ev.Resources)},
				}, nil
			}
		}
	}
}

func mustUUID(s string) uuid.UUID {
	id, err := uuid.Parse(s)
	if err != nil {
		panic(fmt.Sprintf("server: %q is not a uuid: %v", s, err))
	}
	return id
}

func genUsage(u models.Usage) gen.Usage {
	return gen.Usage{
		PromptTokens: u.PromptTokens, PromptUnitPrice: u.PromptUnitPrice, PromptPriceUnit: u.PromptPriceUnit,
		PromptPrice: u.PromptPrice, CompletionTokens: u.CompletionTokens, CompletionUnitPrice: u.CompletionUnitPrice,
		CompletionPriceUnit: u.CompletionPriceUnit, CompletionPrice: u.CompletionPrice, TotalTokens: u.TotalTokens,
		TotalPrice: u.TotalPrice, Currency: u.Currency, Latency: u.Latency,
	}
}

// chatStream writes a run as Server-Sent Events. One goroutine — the request's — owns the
// writer: it forwards events, sends a ping whenever the stream has been quiet for the ping
// interval, and detaches from the run if the client goes away.
type chatStream struct {
	ctx  context.Context
	run  *chat.Run
	ping time.Duration
	srv  *Server
}

// envelope is what every event of a chat stream carries, as in Dify.
type envelope struct {
	Event          string `json:"event"`
	ConversationID string `json:"conversation_id"`
	MessageID      string `json:"message_id"`
	CreatedAt      int64  `json:"created_at"`
}

// VisitSendChatMessageResponse implements gen.SendChatMessageResponseObject.
func (cs *chatStream) VisitSendChatMessageResponse(w http.ResponseWriter) error {
	sse.Headers(w)
	w.WriteHeader(http.StatusOK)
	out := sse.NewWriter(w, cs.srv.streamStall)
	defer out.Close()
	// The first byte goes out at once, so clients and proxies see the stream has started.
	if err := out.Ping(); err != nil {
		cs.run.Detach()
		return nil
	}
	run := cs.run
	env := envelope{ConversationID: run.ConversationID, MessageID: run.MessageID, CreatedAt: run.CreatedAt.Unix()}
	ticker := time.NewTicker(cs.ping)
	defer ticker.Stop()
	for {
		select {
		case <-cs.ctx.Done():
			run.Detach()
			return nil
		case <-ticker.C:
			if time.Since(out.LastWrite()) >= cs.ping {
				if err := out.Ping(); err != nil {
					run.Detach()
					return nil
				}
			}
		case ev, ok := <-run.Events():
			// Write this event and any that are already waiting, then flush once: under load a
			// stream gets one write per burst instead of one per event.
			for more := true; more; {
				if !ok {
					_ = out.Flush()
					return nil
				}
				data, err := encodeEvent(env, run.TaskID, ev)
				if err != nil {
					cs.srv.log.Error("encode event", "task_id", run.TaskID, "error", err)
				} else if err := out.Queue(data); err != nil {
					run.Detach()
					return nil
				}
				select {
				case ev, ok = <-run.Events():
				default:
					more = false
				}
			}
			if err := out.Flush(); err != nil {
				run.Detach()
				return nil
			}
		}
	}
}

// encodeEvent renders a run event as its contract event.
func encodeEvent(env envelope, taskID string, ev chat.Event) ([]byte, error) {
	switch ev.Kind {
	case chat.EventMessage:
		env.Event = "message"
		return json.Marshal(struct {
			envelope
			TaskID               string    `json:"task_id"`
			ID                   string    `json:"id"`
			Answer               string    `json:"answer"`
			FromVariableSelector *[]string `json:"from_variable_selector"`
		}{env, taskID, env.MessageID, ev.Answer, nil})
	case chat.EventMessageEnd:
		env.Event = "message_end"
		return json.Marshal(struct {
			envelope
			TaskID   string               `json:"task_id"`
			ID       string               `json:"id"`
			Metadata gen.ResponseMetadata `json:"metadata"`
			Files    *[]map[string]any    `json:"files"`
		}{env, taskID, env.MessageID, gen.ResponseMetadata{Usage: genUsage(*ev.Usage), RetrieverResources: genResources(ev.Resources)}, nil})
	case chat.EventError:
		env.Event = "error"
		e := domainError(ev.Err)
		return json.Marshal(struct {
			envelope
			Status  int    `json:"status"`
			Code    string `json:"code"`
			Message string `json:"message"`
		}{env, e.Status, e.Code, e.Message})
	}
	return nil, fmt.Errorf("server: unknown event kind %d", ev.Kind)
}

// StopChatMessage answers POST /chat-messages/{task_id}/stop. As in Dify it answers success
// whether or not the task exists or belongs to this user.
func (s *Server) StopChatMessage(ctx context.Context, req gen.StopChatMessageRequestObject) (gen.StopChatMessageResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.tasks.Stop(ctx, req.TaskId, app.ID, req.Body.User); err != nil {
		return nil, err
	}
	return gen.StopChatMessage200JSONResponse{SuccessJSONResponse: gen.SuccessJSONResponse{Result: gen.ResultResultSuccess}}, nil
}

// genResources maps the knowledge chunks an answer used to the contract's retriever resources.
func genResources(rs []store.RetrieverResource) []gen.RetrieverResource {
	out := make([]gen.RetrieverResource, len(rs))
	for i, r := range rs {
		id, msgID := mustUUID(r.ID), mustUUID(r.MessageID)
		created := r.CreatedAt.Unix()
		dst, hash, hits, words, segPos := r.DataSourceType, r.IndexNodeHash, r.HitCount, r.WordCount, r.SegmentPosition
		out[i] = gen.RetrieverResource{Id: &id, MessageId: &msgID, Position: r.Position,
			DatasetId: mustUUID(r.DatasetID), DatasetName: r.DatasetName, DocumentId: mustUUID(r.DocumentID),
			DocumentName: r.DocumentName, DataSourceType: &dst, SegmentId: mustUUID(r.SegmentID),
			SegmentPosition: &segPos, IndexNodeHash: &hash, Content: r.Content, Score: float32(r.Score),
			HitCount: &hits, WordCount: &words, CreatedAt: &created}
	}
	return out
}
