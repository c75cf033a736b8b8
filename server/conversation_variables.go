package server

import (
	"context"
	"encoding/json"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/conversations"
)

// genConversationVariable is a variable as the contract shows it: the value as text, a string
// as it is and anything else as its JSON.
func genConversationVariable(v conversations.Variable) gen.ConversationVariable {
	text := string(v.Value)
	var s string
	if json.Unmarshal(v.Value, &s) == nil {
		text = s
	}
	return gen.ConversationVariable{
		Id: v.ID, Name: v.Name, ValueType: v.ValueType, Value: text, Description: v.Description,
		CreatedAt: v.CreatedAt.Unix(), UpdatedAt: v.UpdatedAt.Unix(),
	}
}

// ListConversationVariables answers GET /conversations/{conversation_id}/variables.
func (s *Server) ListConversationVariables(ctx context.Context, req gen.ListConversationVariablesRequestObject) (gen.ListConversationVariablesResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	if !validID(req.ConversationId) {
		return nil, conversations.ErrConversationNotFound
	}
	p := req.Params
	limit := intOr(p.Limit, 20)
	vs, more, err := s.conversations.Variables(ctx, app, str(s.endUserPtr(ctx, p.User)), req.ConversationId, str(p.LastId), limit, str(p.VariableName))
	if err != nil {
		return nil, err
	}
	out := gen.ListConversationVariables200JSONResponse{Limit: limit, HasMore: more, Data: make([]gen.ConversationVariable, 0, len(vs))}
	for _, v := range vs {
		out.Data = append(out.Data, genConversationVariable(v))
	}
	return out, nil
}

// UpdateConversationVariable answers PUT /conversations/{conversation_id}/variables/{variable_id}.
func (s *Server) UpdateConversationVariable(ctx context.Context, req gen.UpdateConversationVariableRequestObject) (gen.UpdateConversationVariableResponseObject, error) {
	app, err := s.chatApp(ctx)
	if err != nil {
		return nil, err
	}
	if !validID(req.ConversationId) {
		return nil, conversations.ErrConversationNotFound
	}
	v, err := s.conversations.UpdateVariable(ctx, app, str(s.endUserPtr(ctx, req.Body.User)), req.ConversationId, req.VariableId, req.Body.Value)
	if err != nil {
		return nil, err
	}
	return gen.UpdateConversationVariable200JSONResponse(genConversationVariable(v)), nil
}
