package chat

import (
	"context"

	"github.com/parleyhq/parley/internal/run"
	"github.com/parleyhq/parley/internal/store"
)

// MessageFiles checks a message's file references as a Chatbot's are checked (a remote file needs
// an absolute http(s) URL, an upload must be this end user's) and returns the rows recording them
// on the message, with the upload behind each (zero for a remote file): for runners of other
// kinds that take files.
func (s *Service) MessageFiles(ctx context.Context, appID, endUserID string, refs []run.File) ([]store.MessageFile, []store.UploadFile, error) {
	atts, err := s.resolveFiles(ctx, appID, endUserID, refs)
	if err != nil {
		return nil, nil, err
	}
	uploads := make([]store.UploadFile, len(atts))
	for i, a := range atts {
		uploads[i] = a.upload
	}
	return messageFiles(atts), uploads, nil
}
