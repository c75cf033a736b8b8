package chat

import (
	"context"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/store"
)

// A crash (kill -9, out of memory, power loss) ends a process without ending its runs: their
// messages stay running in the database. So that such a message ends with what its client saw
// and a clear status, a process keeps its own runs' messages current while they run, and ends
// those whose process is gone:
//
//   - every ProgressInterval at most, a run's answer so far is written, and every
//     StaleAfter/4 at least, its message's updated_at (its heartbeat) is refreshed, even while
//     the model sends nothing;
//   - at start-up (EndInterrupted, before the server listens) and every StaleAfter/2, the
//     running messages whose heartbeat is older than StaleAfter are ended with status error,
//     InterruptedError and the answer stored so far.
//
// The heartbeat, not the process identity, decides: replicas sharing a PostgreSQL database
// end only the runs of processes that stopped writing, never those of a live one. Clocks of
// replicas must agree to well within StaleAfter.
//
// The rest of a run cannot be left half done: the conversation, the message and its files are
// stored in one transaction (Send), and the outcome with its retriever resources in another
// (store.FinishMessage). A conversation whose first answer was cut by a crash is not named
// afterwards: it keeps DefaultConversationName, the state it has when naming fails or
// auto_generate_name is false, and it can be renamed through the API.
//
// One goroutine per process does all of it, each pass in one transaction per batch of runs
// (store.SaveMessageProgress): the stream of a run never waits for the database, and the cost
// grows with the number of long runs, not with the tokens they stream.

// track registers a run for keepRuns until untrack.
func (s *Service) track(r *Run) {
	s.liveMu.Lock()
	s.live[r.MessageID] = r
	s.liveMu.Unlock()
}

func (s *Service) untrack(r *Run) {
	s.liveMu.Lock()
	delete(s.live, r.MessageID)
	s.liveMu.Unlock()
}

// due is how much of period must have passed for a write to be due at a tick: ticks are a
// period apart give or take scheduling jitter, and a tick a hair early must not postpone the
// write by a whole period.
func due(period time.Duration) time.Duration { return period - period/10 }

// heartbeat is how often a run's message is written at least.
func (s *Service) heartbeat() time.Duration { return s.staleAfter / 4 }

// keepRuns writes the progress of this process's runs and ends stale ones, until Shutdown.
func (s *Service) keepRuns() {
	defer s.wg.Done()
	tick := time.NewTicker(min(s.interval, s.heartbeat()))
	defer tick.Stop()
	sweepEvery := s.staleAfter / 2
	nextSweep := time.Now().Add(sweepEvery)
	var batch []store.MessageProgress
	var runs []*Run
	for {
		select {
		case <-s.life.Done():
			return
		case now := <-tick.C:
			batch, runs = s.saveProgress(now, batch[:0], runs[:0])
			// Keep neither answers nor finished runs reachable until the next tick.
			clear(batch)
			clear(runs)
			if !now.Before(nextSweep) {
				s.endStale(now)
				nextSweep = now.Add(sweepEvery)
			}
		}
	}
}

// saveProgress writes the answer of each run that grew and whose message was last written at
// least an interval ago, and the heartbeat of each run whose message was not written for a
// heartbeat. batch and runs are reused buffers.
func (s *Service) saveProgress(now time.Time, batch []store.MessageProgress, runs []*Run) ([]store.MessageProgress, []*Run) {
	s.liveMu.Lock()
	for _, r := range s.live {
		r.mu.Lock()
		grew := r.answer.Len() != r.saved && now.Sub(r.answerAt) >= due(s.interval)
		answer := ""
		if grew {
			// A copy: the run goes on appending to its builder while the write is under way.
			answer = strings.Clone(r.answer.String())
		}
		r.mu.Unlock()
		if !grew && now.Sub(r.beatAt) < due(s.heartbeat()) {
			continue
		}
		batch = append(batch, store.MessageProgress{ID: r.MessageID, Answer: answer, Changed: grew})
		runs = append(runs, r)
	}
	s.liveMu.Unlock()
	if len(batch) == 0 {
		return batch, runs
	}
	ctx, cancel := context.WithTimeout(s.life, s.heartbeat())
	defer cancel()
	if err := s.store.SaveMessageProgress(ctx, now, batch); err != nil {
		// The next tick tries again; the runs themselves go on.
		if s.life.Err() == nil {
			s.log.Warn("save the progress of running answers", "runs", len(batch), "error", err)
		}
		return batch, runs
	}
	for i, r := range runs {
		if batch[i].Changed {
			r.saved, r.answerAt = len(batch[i].Answer), now
		}
		r.beatAt = now
	}
	return batch, runs
}

// endStale ends the runs of dead processes (see EndInterrupted).
func (s *Service) endStale(now time.Time) {
	ctx, cancel := context.WithTimeout(s.life, s.heartbeat())
	defer cancel()
	n, err := s.store.EndStaleMessages(ctx, now.Add(-s.staleAfter), InterruptedError)
	switch {
	case err != nil && s.life.Err() == nil:
		s.log.Warn("end interrupted answers", "error", err)
	case n > 0:
		s.log.Warn("ended answers interrupted by a stopped server", "messages", n)
	}
}

// EndInterrupted ends the messages left running by a process that is gone: those whose
// heartbeat is older than StaleAfter get status error, InterruptedError and keep the answer
// stored so far. It returns how many it ended. The server calls it at start-up, before it
// listens; the same sweep then runs every StaleAfter/2.
func (s *Service) EndInterrupted(ctx context.Context) (int64, error) {
	return s.store.EndStaleMessages(ctx, time.Now().Add(-s.staleAfter), InterruptedError)
}
