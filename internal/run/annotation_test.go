package run

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/apps"
	"github.com/parleyhq/parley/internal/store/storetest"
)

// cannedAnnotations answers the queries it holds; the engine's hook is what is tested.
type cannedAnnotations struct {
	answers map[string]string
	fail    error
	mu      sync.Mutex
	asked   []string
	hits    []string // message ids
}

func (c *cannedAnnotations) Match(_ context.Context, _ *apps.App, query string) (AnnotationHit, bool, error) {
	c.mu.Lock()
	c.asked = append(c.asked, query)
	c.mu.Unlock()
	if c.fail != nil {
		return AnnotationHit{}, false, c.fail
	}
	a, ok := c.answers[query]
	return AnnotationHit{ID: "ann-" + query, Answer: a, Score: 0.97, AccountID: "acc", AccountName: "Owner"}, ok, nil
}

func (c *cannedAnnotations) RecordHit(_ context.Context, _ *apps.App, _ AnnotationHit, messageID, _ string) error {
	c.mu.Lock()
	c.hits = append(c.hits, messageID)
	c.mu.Unlock()
	return nil
}

func TestAnnotationReply(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		ann := &cannedAnnotations{answers: map[string]string{"opening hours?": "Nine to five."}}
		env := newEngineEnv(t, e, func(o *Options) { o.Annotations = ann })

		// A match answers without the runner: one message, message_end with the annotation.
		r := env.start(t, Request{App: env.chat, Query: "opening hours?", Streaming: true})
		evs := collectEvents(t, r)
		if len(evs) != 2 || evs[0].Kind != EventMessage || evs[0].Answer != "Nine to five." || evs[1].Kind != EventMessageEnd {
			t.Fatalf("events = %+v", evs)
		}
		if a := evs[1].End.Annotation; a == nil || a.ID != "ann-opening hours?" || a.Account.Name != "Owner" || evs[1].End.Usage.TotalTokens != 0 {
			t.Fatalf("message_end = %+v", evs[1].End)
		}
		waitDone(t, r)
		if n := env.runner.prepared.Load(); n != 0 {
			t.Fatalf("the runner prepared %d jobs for an annotated question", n)
		}
		m := env.stored(t, env.chat, r, "u1")
		var md map[string]any
		if err := json.Unmarshal(m.Metadata, &md); err != nil {
			t.Fatal(err)
		}
		if m.Answer != "Nine to five." || md["annotation_reply"] == nil {
			t.Fatalf("stored %q %s", m.Answer, m.Metadata)
		}
		if len(ann.hits) != 1 || ann.hits[0] != r.MessageID {
			t.Fatalf("hits = %v", ann.hits)
		}

		// No match: the runner answers.
		r = env.start(t, Request{App: env.chat, Query: "something else", Streaming: true})
		env.feedLater(t, emit(Event{Kind: EventMessage, Answer: "From the model."}), step{end: true})
		evs = collectEvents(t, r)
		if evs[0].Answer != "From the model." || evs[len(evs)-1].End.Annotation != nil {
			t.Fatalf("unmatched events = %+v", evs)
		}
		waitDone(t, r)

		// One-shot kinds never ask.
		asked := len(ann.asked)
		r = env.start(t, Request{App: env.oneOff, Query: "opening hours?"})
		env.feedLater(t, step{end: true})
		collectEvents(t, r)
		waitDone(t, r)
		if len(ann.asked) != asked {
			t.Fatal("a Completion app's query was matched against annotations")
		}

		// A failed search answers with the model.
		ann.fail = errors.New("embedding provider down")
		r = env.start(t, Request{App: env.chat, Query: "opening hours?", Streaming: true})
		env.feedLater(t, emit(Event{Kind: EventMessage, Answer: "Model."}), step{end: true})
		if evs = collectEvents(t, r); evs[0].Answer != "Model." {
			t.Fatalf("after a failed search: %+v", evs)
		}
		waitDone(t, r)
	})
}

// echoSpeech "synthesizes" text as its bytes, prefixed, in two pieces.
type echoSpeech struct{}

func (echoSpeech) Speak(_ context.Context, _ *apps.App, text string, chunk func([]byte) error) error {
	b := []byte("AUDIO[" + text + "]")
	if err := chunk(b[:3]); err != nil {
		return err
	}
	return chunk(b[3:])
}

func TestAutoPlay(t *testing.T) {
	storetest.ForEachEngine(t, func(t *testing.T, e storetest.Engine) {
		env := newEngineEnv(t, e, func(o *Options) { o.Speech = echoSpeech{} })
		speaking := *env.chat
		speaking.Features.TextToSpeech = apps.TextToSpeech{Enabled: true, AutoPlay: "enabled"}

		spoken := func(evs []Event) (string, []string) {
			var audio []byte
			var kinds []string
			for _, ev := range evs {
				kinds = append(kinds, ev.Kind.String())
				if ev.Kind == EventTTSMessage {
					b, err := base64.StdEncoding.DecodeString(ev.Answer)
					if err != nil {
						t.Fatal(err)
					}
					audio = append(audio, b...)
				}
			}
			return string(audio), kinds
		}

		r := env.start(t, Request{App: &speaking, Query: "q", Streaming: true})
		env.feedLater(t, emit(Event{Kind: EventMessage, Answer: "The first sentence is long. The sec"}),
			emit(Event{Kind: EventMessage, Answer: "ond one ends here"}), step{end: true})
		audio, kinds := spoken(collectEvents(t, r))
		waitDone(t, r)
		if want := "AUDIO[The first sentence is long.]AUDIO[ The second one ends here]"; audio != want {
			t.Fatalf("audio %q, want %q", audio, want)
		}
		if n := len(kinds); kinds[n-1] != "tts_message_end" || !strings.Contains(strings.Join(kinds, " "), "message_end") {
			t.Fatalf("events %v", kinds)
		}

		// Blocking requests, apps without auto-play and Completion apps get no audio.
		writer := *env.oneOff
		writer.Features.TextToSpeech = speaking.Features.TextToSpeech
		for _, req := range []Request{{App: &speaking, Query: "q"}, {App: env.chat, Query: "q", Streaming: true}, {App: &writer, Query: "q", Streaming: true}} {
			r := env.start(t, req)
			env.feedLater(t, emit(Event{Kind: EventMessage, Answer: "A sentence long enough to be read."}), step{end: true})
			if audio, kinds := spoken(collectEvents(t, r)); audio != "" || strings.Contains(strings.Join(kinds, " "), "tts") {
				t.Fatalf("audio for %+v: %v", req, kinds)
			}
			waitDone(t, r)
		}

		// A failed run ends with its error, not tts_message_end.
		r = env.start(t, Request{App: &speaking, Query: "q", Streaming: true})
		env.feedLater(t, emit(Event{Kind: EventMessage, Answer: "Partial"}), step{end: true, err: errors.New("boom")})
		_, kinds = spoken(collectEvents(t, r))
		waitDone(t, r)
		if kinds[len(kinds)-1] != "error" || strings.Contains(strings.Join(kinds, " "), "tts_message_end") {
			t.Fatalf("failed run events %v", kinds)
		}
	})
}

func TestLastSentenceEnd(t *testing.T) {
	for in, want := range map[string]int{
		"":                  0,
		"no end":            0,
		"One. Two":          4,
		"Why? Because! Yes": 13,
		"好的。然后":             len("好的。"),
		"line\nnext":        5,
	} {
		if got := lastSentenceEnd(in); got != want {
			t.Errorf("lastSentenceEnd(%q) = %d, want %d", in, got, want)
		}
	}
}
