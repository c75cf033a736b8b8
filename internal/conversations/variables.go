package conversations

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/workflow/value"
)

// Errors of the conversation-variable operations.
var (
	// ErrVariableNotFound is a variable the conversation does not have.
	ErrVariableNotFound = errors.New("conversation variable not found")
	// ErrLastVariableNotFound is a last_id that names no variable of the listing.
	ErrLastVariableNotFound = errors.New("last conversation variable not found")
	// ErrInvalidValue is a new value the value model cannot hold: nested too deeply, or a
	// number out of range.
	ErrInvalidValue = errors.New("the value cannot be stored: it nests too deeply or holds a number out of range")
)

// VariableNameError is a variable_name filter Dify refuses: characters other than letters,
// digits, '-', '_' and '.', or one of the fragments it screens for.
type VariableNameError struct{ Msg string }

func (e *VariableNameError) Error() string { return e.Msg }

// VariableTypeError is a new value that is not of the variable's type.
type VariableTypeError struct {
	Name, Expected, Got string
}

func (e *VariableTypeError) Error() string {
	return fmt.Sprintf("Type mismatch: variable '%s' expects %s, but got %s type", e.Name, e.Expected, e.Got)
}

// Variable is a conversation variable's value in a conversation, with the description the app
// declares for it.
type Variable struct {
	store.ConversationVariable
	Description string
}

// declared is what the app declares of a conversation variable: its description and position.
type declared struct {
	pos         int
	description string
}

func declarations(app *apps.App) map[string]declared {
	out := map[string]declared{}
	if app.Workflow == nil {
		return out
	}
	for i, d := range app.Workflow.ConversationVariables {
		id, _ := d["id"].(string)
		name, _ := d["name"].(string)
		if id == "" {
			// The Chatflow runner keys a variable declared without an id by its name.
			id = name
		}
		desc, _ := d["description"].(string)
		if _, dup := out[id]; !dup {
			out[id] = declared{pos: i, description: desc}
		}
	}
	return out
}

// conversationVariables are the variables of one of the user's conversations, in listing
// order: by creation, then as the app declares them (a variable it no longer declares after
// those it does), then by name and id.
func (s *Service) conversationVariables(ctx context.Context, app *apps.App, user, conversationID string) ([]Variable, error) {
	u, err := s.endUser(ctx, app, user)
	if err != nil {
		return nil, err
	}
	conv, err := s.store.Conversation(ctx, app.ID, u.ID, conversationID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrConversationNotFound
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.store.ConversationVariables(ctx, conv.ID)
	if err != nil {
		return nil, err
	}
	decl := declarations(app)
	out := make([]Variable, len(rows))
	for i, r := range rows {
		out[i] = Variable{ConversationVariable: r, Description: decl[r.ID].description}
	}
	position := func(id string) int {
		if d, ok := decl[id]; ok {
			return d.pos
		}
		return len(decl)
	}
	slices.SortStableFunc(out, func(a, b Variable) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(position(a.ID), position(b.ID)),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// CheckVariableName checks a variable_name filter as Dify does.
func CheckVariableName(name string) error {
	stripped := strings.NewReplacer("-", "", "_", "", ".", "").Replace(name)
	if stripped == "" || strings.IndexFunc(stripped, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
		return &VariableNameError{Msg: "Variable name can only contain letters, numbers, hyphens (-), underscores (_), and periods (.)"}
	}
	lower := strings.ToLower(name)
	for _, frag := range []string{"--", "xp_", "sp_"} {
		if strings.Contains(lower, frag) {
			return &VariableNameError{Msg: "Variable name contains invalid characters: " + frag}
		}
	}
	return nil
}

// Variables returns a page of a conversation's variables after lastID, only those whose name
// contains nameFilter (ignoring case) when it is not empty.
func (s *Service) Variables(ctx context.Context, app *apps.App, user, conversationID, lastID string, limit int, nameFilter string) ([]Variable, bool, error) {
	if nameFilter != "" {
		if err := CheckVariableName(nameFilter); err != nil {
			return nil, false, err
		}
	}
	all, err := s.conversationVariables(ctx, app, user, conversationID)
	if err != nil {
		return nil, false, err
	}
	if nameFilter != "" {
		f := strings.ToLower(nameFilter)
		all = slices.DeleteFunc(all, func(v Variable) bool { return !strings.Contains(strings.ToLower(v.Name), f) })
	}
	if lastID = strings.TrimSpace(lastID); lastID != "" {
		i := slices.IndexFunc(all, func(v Variable) bool { return v.ID == lastID })
		if i < 0 {
			return nil, false, ErrLastVariableNotFound
		}
		all = all[i+1:]
	}
	if len(all) > limit {
		return all[:limit], true, nil
	}
	return all, false, nil
}

// UpdateVariable sets a conversation variable to the JSON value raw, which must be of the
// variable's type, and returns the variable as stored. The next Chatflow turn of the
// conversation reads the new value.
func (s *Service) UpdateVariable(ctx context.Context, app *apps.App, user, conversationID, variableID string, raw json.RawMessage) (Variable, error) {
	all, err := s.conversationVariables(ctx, app, user, conversationID)
	if err != nil {
		return Variable{}, err
	}
	i := slices.IndexFunc(all, func(v Variable) bool { return v.ID == variableID })
	if i < 0 {
		return Variable{}, ErrVariableNotFound
	}
	cur := all[i]
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	v, err := value.Decode(raw)
	if err != nil {
		return Variable{}, fmt.Errorf("conversations: new value of %s: %w: %w", cur.Name, ErrInvalidValue, err)
	}
	expected := cur.ValueType
	if expected == "integer" || expected == "float" {
		// Dify shows these as number and checks them as one.
		expected = "number"
	}
	if !value.Conforms(v, expected) {
		return Variable{}, &VariableTypeError{Name: cur.Name, Expected: expected, Got: value.SegmentType(v)}
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return Variable{}, fmt.Errorf("conversations: new value of %s: %w: %w", cur.Name, ErrInvalidValue, err)
	}
	upd := cur.ConversationVariable
	upd.Value = enc
	if err := s.store.SaveConversationVariables(ctx, []store.ConversationVariable{upd}); err != nil {
		return Variable{}, err
	}
	saved, err := s.store.ConversationVariables(ctx, cur.ConversationID)
	if err != nil {
		return Variable{}, err
	}
	for _, r := range saved {
		if r.ID == cur.ID {
			return Variable{ConversationVariable: r, Description: cur.Description}, nil
		}
	}
	return Variable{}, ErrVariableNotFound
}
