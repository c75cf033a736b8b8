package pubsub_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/pubsub"
	"github.com/parleyhq/parley/internal/pubsub/pubsubtest"
)

func TestLocal(t *testing.T) {
	l := pubsub.NewLocal()
	pubsubtest.Run(t, l, l)
}
