package eventlog_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/eventlog"
	"github.com/parleyhq/parley/internal/eventlog/eventlogtest"
)

func TestLocalContract(t *testing.T) {
	eventlogtest.Run(t, func(t *testing.T, lim eventlog.Limits) (eventlog.Log, eventlog.Log) {
		l := eventlog.NewLocal(lim)
		return l, l
	})
}
