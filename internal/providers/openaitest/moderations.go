package openaitest

import (
	"net/http"
	"strconv"
	"strings"
)

// DefaultModerationModel is the moderation model the server knows by default.
const DefaultModerationModel = "omni-moderation-latest"

// moderationCategories are the categories OpenAI reports for each input; the fake sets them
// all to the input's verdict.
var moderationCategories = []string{"harassment", "hate", "self-harm", "sexual", "violence"}

// moderations answers OpenAI's POST /moderations: one result per input, flagged when a rule
// with Flagged set matches it (On's substring is in the input). A rule with Status or ErrorBody
// that matches any input answers with that error instead; FirstByteDelay, CutAfterChunks (the
// connection drops before the body) and HangAfterChunks apply as for embeddings.
func (s *Server) moderations(w http.ResponseWriter, r *http.Request, req *Request) {
	if len(req.Input) == 0 {
		writeError(w, http.StatusBadRequest, "'input' must not be empty.", "invalid_request_error", "")
		return
	}
	if _, ok := s.fault(w, r, req.Input...); !ok {
		return
	}
	results := make([]map[string]any, len(req.Input))
	for i, in := range req.Input {
		flagged := s.flagged(in)
		cats, scores := map[string]bool{}, map[string]float64{}
		for _, c := range moderationCategories {
			cats[c] = flagged
			scores[c] = 0.0001
			if flagged {
				scores[c] = 0.9
			}
		}
		results[i] = map[string]any{"flagged": flagged, "categories": cats, "category_scores": scores}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "modr-" + strconv.FormatUint(s.seq.Add(1), 10), "model": req.Model, "results": results,
	})
}

// flagged reports whether a rule with Flagged set matches text.
func (s *Server) flagged(text string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, r := range s.rules {
		if r.fn == nil && r.reply.Flagged && strings.Contains(text, r.substr) {
			return true
		}
	}
	return false
}
