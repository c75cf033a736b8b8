package run

import (
	"context"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/models"
)

// Annotations answers questions from an app's annotations (Dify's annotation reply): with reply
// switched on for an app, a query whose embedding is close enough to an annotation's question is
// answered with the annotation's answer, without calling the app's model.
type Annotations interface {
	// Match returns the app's annotation that answers query, and false when none does (reply
	// off, nothing above the threshold). An error means the search failed; the engine then
	// answers as if nothing matched, as Dify does.
	Match(ctx context.Context, app *apps.App, query string) (AnnotationHit, bool, error)
	// RecordHit counts a question answered from an annotation.
	RecordHit(ctx context.Context, app *apps.App, hit AnnotationHit, messageID, query string) error
}

// AnnotationHit is an annotation that answers a query.
type AnnotationHit struct {
	ID     string
	Answer string
	Score  float64
	// AccountID and AccountName are who the annotation is attributed to (message_end's
	// annotation_reply.account).
	AccountID, AccountName string
}

// AnnotationReply is message_end's annotation_reply: the annotation the answer came from.
type AnnotationReply struct {
	ID      string                 `json:"id"`
	Account AnnotationReplyAccount `json:"account"`
}

// AnnotationReplyAccount is who an annotation is attributed to.
type AnnotationReplyAccount struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// annotationJob is the job that answers t from an annotation, if one matches: the annotation's
// answer as one message event, no usage, annotation_reply in the metadata, and the hit recorded.
// One-shot kinds (Completion) never answer from annotations, as in Dify.
func (e *Engine) annotationJob(ctx context.Context, kind Kind, t Turn) (Job, bool) {
	if e.annotations == nil || kind.OneShot {
		return Job{}, false
	}
	app := t.App
	hit, ok, err := e.annotations.Match(ctx, app, t.Query)
	if err != nil {
		e.log.Warn("annotation search failed; answering with the model", "app_id", app.ID, "error", err)
		return Job{}, false
	}
	if !ok {
		return Job{}, false
	}
	reply := &AnnotationReply{ID: hit.ID, Account: AnnotationReplyAccount{ID: hit.AccountID, Name: hit.AccountName}}
	uncited := app.Mode == apps.ModeAgent
	query := t.Query
	return Job{
		Provider: app.Model.Provider, Model: app.Model.Name,
		Work: WorkFunc(func(ctx context.Context, out *Output) (Outcome, error) {
			out.Emit(Event{Kind: EventMessage, Answer: hit.Answer})
			if err := e.annotations.RecordHit(context.WithoutCancel(ctx), app, hit, out.MessageID(), query); err != nil {
				e.log.Warn("record annotation hit", "app_id", app.ID, "annotation_id", hit.ID, "error", err)
			}
			return Outcome{
				Usage: models.EmptyUsage(), Annotation: reply, Uncited: uncited,
				Metadata: map[string]any{"annotation_reply": reply},
			}, nil
		}),
	}, true
}
