package run

import (
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/parleyhq/parley/internal/apps"
)

// Speech synthesizes speech for answers (text-to-speech auto-play).
type Speech interface {
	// Speak reads text aloud with the app's voice, calling chunk with each piece of audio as the
	// model sends it.
	Speak(ctx context.Context, app *apps.App, text string, chunk func(audio []byte) error) error
}

// AutoPlays reports whether a streamed answer of app is read aloud as it streams: a Chatbot,
// Legacy Agent or Chatflow app whose text-to-speech feature is on with auto-play.
func AutoPlays(app *apps.App) bool {
	switch app.Mode {
	case apps.ModeChat, apps.ModeAgentChat, apps.ModeAdvancedChat:
	default:
		return false
	}
	tts := app.Features.TextToSpeech
	return tts.Enabled && tts.AutoPlay == "enabled"
}

// speaker reads a run's answer aloud while it streams, as Dify's auto-play does: the answer's
// text is cut into sentences, each is synthesized in turn by one goroutine, and its audio goes to
// the client as tts_message events (base64) between the answer's events; tts_message_end follows
// the run's closing event. A nil *speaker does nothing.
type speaker struct {
	e   *Engine
	app *apps.App
	ctx context.Context
	// stop ends the synthesis early (the run failed).
	stop context.CancelFunc

	mu      sync.Mutex
	pending strings.Builder // text not yet cut into a sentence
	queue   []string        // sentences waiting to be spoken
	closed  bool
	wake    chan struct{} // a sentence was queued, or the input closed
	done    chan struct{} // the goroutine is over
}

// minSentence is the shortest text sent to the speech model on its own: shorter sentences wait
// for the next, so a run of "Yes. No. OK." costs one call, not three.
const minSentence = 20

func (e *Engine) speaker(app *apps.App, streaming bool, r *Run) *speaker {
	if e.speech == nil || !streaming || !AutoPlays(app) {
		return nil
	}
	ctx, cancel := context.WithCancel(e.life)
	s := &speaker{e: e, app: app, ctx: ctx, stop: cancel, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.loop(r)
	return s
}

// write adds answer text; complete sentences are queued for synthesis.
func (s *speaker) write(text string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.pending.WriteString(text)
	buf := s.pending.String()
	cut := lastSentenceEnd(buf)
	if cut >= minSentence {
		s.queue = append(s.queue, buf[:cut])
		s.pending.Reset()
		s.pending.WriteString(buf[cut:])
	}
	s.mu.Unlock()
	s.signal()
}

func (s *speaker) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// lastSentenceEnd is the index just past the last sentence end in text (a full stop, question or
// exclamation mark — Latin or CJK — or a line break), or 0.
func lastSentenceEnd(text string) int {
	for i := len(text); i > 0; {
		r, size := utf8.DecodeLastRuneInString(text[:i])
		switch r {
		case '.', '!', '?', '\n', '。', '！', '？', '；', ';':
			return i
		}
		i -= size
	}
	return 0
}

// next waits for a sentence to speak; false once the input is closed and drained.
func (s *speaker) next() (string, bool) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			t := s.queue[0]
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return t, true
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return "", false
		}
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			return "", false
		}
	}
}

func (s *speaker) loop(r *Run) {
	defer close(s.done)
	for {
		text, ok := s.next()
		if !ok {
			return
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		err := s.e.speech.Speak(s.ctx, s.app, text, func(audio []byte) error {
			if len(audio) > 0 {
				r.emit(Event{Kind: EventTTSMessage, Answer: base64.StdEncoding.EncodeToString(audio)})
			}
			return s.ctx.Err()
		})
		if err != nil && s.ctx.Err() == nil {
			s.e.log.Warn("text to speech failed", "message_id", r.MessageID, "error", err)
		}
	}
}

// finish speaks what is left of the answer, waits for the audio and ends it with
// tts_message_end.
func (s *speaker) finish(r *Run) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if rest := s.pending.String(); strings.TrimSpace(rest) != "" {
		s.queue = append(s.queue, rest)
	}
	s.pending.Reset()
	s.closed = true
	s.mu.Unlock()
	s.signal()
	<-s.done
	s.stop()
	r.emit(Event{Kind: EventTTSMessageEnd})
}

// abort ends the synthesis without finishing it (the run failed) and waits for it to stop.
func (s *speaker) abort() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	<-s.done
}
