package server

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/parleyhq/parley/gen"
	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/audio"
	"github.com/parleyhq/parley/internal/files"
)

// AudioToText answers POST /audio-to-text: one `file` part of an audio type Dify takes, at most
// 30 MB, and an optional `user` field. The part is spooled while the form streams in and cut off
// past the limit.
func (s *Server) AudioToText(ctx context.Context, req gen.AudioToTextRequestObject) (gen.AudioToTextResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	form, err := readForm(req.Body, formSpec{
		fields:    map[string]int64{"user": 1 << 10},
		fileLimit: func(string) (int64, string) { return audio.MaxAudioBytes, "audio" },
	})
	defer form.close()
	var tooLarge *files.TooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return nil, audio.ErrTooLarge
	case err != nil:
		return nil, err
	case form.nFiles == 0:
		return nil, audio.ErrNoAudio
	}
	if err := audio.CheckType(form.file.contentType); err != nil {
		return nil, err
	}
	if _, err := s.runs.EndUser(ctx, app.ID, s.endUser(ctx, form.fields["user"])); err != nil {
		return nil, err
	}
	body, err := form.file.rewind()
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	text, err := s.audio.Transcribe(ctx, featured(app), form.file.filename, form.file.contentType, data)
	if err != nil {
		return nil, err
	}
	return gen.AudioToText200JSONResponse{Text: text}, nil
}

// TextToAudio answers POST /text-to-audio: the audio of `text`, or of the answer of
// `message_id`, streamed as the model sends it.
func (s *Server) TextToAudio(ctx context.Context, req gen.TextToAudioRequestObject) (gen.TextToAudioResponseObject, error) {
	app, err := s.app(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	var text, voice, user string
	if b.Text != nil {
		text = *b.Text
	}
	if b.Voice != nil {
		voice = *b.Voice
	}
	if b.User != nil {
		user = *b.User
	}
	user = s.endUser(ctx, user)
	if b.MessageId != nil {
		eu, err := s.runs.EndUser(ctx, app.ID, user)
		if err != nil {
			return nil, err
		}
		if text, err = s.audio.Answer(ctx, app.ID, eu.ID, b.MessageId.String()); err != nil {
			return nil, err
		}
	}
	body, contentType, err := s.audio.Synthesize(ctx, featured(app), text, voice)
	if err != nil {
		return nil, err
	}
	return audioResponse{body: body, contentType: contentType}, nil
}

// featured is the app whose features the audio operations follow: an Agent app's are its
// published Agent's (an app without one has its own, all off).
func featured(app *apps.App) *apps.App {
	if a, err := answering(app); err == nil {
		return a
	}
	return app
}

// audioResponse streams synthesized speech, flushing each piece as it arrives from the model.
type audioResponse struct {
	body        io.ReadCloser
	contentType string
}

func (r audioResponse) VisitTextToAudioResponse(w http.ResponseWriter) error {
	defer r.body.Close()
	w.Header().Set("Content-Type", r.contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	buf := make([]byte, 16<<10)
	for {
		n, err := r.body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return nil
			}
			_ = rc.Flush()
		}
		if err != nil {
			// A model that fails mid-way ends the body short; the status is already sent.
			return nil
		}
	}
}
