package run

import (
	"context"

	"github.com/parleyhq/parley/internal/store"
)

// AnonymousUser is the end user of requests that name none, as in Dify.
const AnonymousUser = "DEFAULT-USER"

// EndUser returns the end user a request's `user` value names in app appID, creating it on
// first sight; an empty value is the anonymous end user. Every route resolves its end user
// here.
func (e *Engine) EndUser(ctx context.Context, appID, user string) (store.EndUser, error) {
	if user == "" {
		user = AnonymousUser
	}
	return e.store.EndUser(ctx, appID, user)
}

// EndUserByID returns the end user with this id if it is one of app appID's; otherwise the
// error wraps store.ErrNotFound.
func (e *Engine) EndUserByID(ctx context.Context, appID, id string) (store.EndUser, error) {
	return e.store.EndUserByID(ctx, appID, id)
}
