package run

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
//     InterruptedError and the answer stored so far. A server alone on its store (SQLite) ends
//     all of them at start-up instead (EndAllInterrupted), without waiting for StaleAfter.
//
// The heartbeat, not the process identity, decides: replicas sharing a PostgreSQL database
// end only the runs of processes that stopped writing, never those of a live one. Clocks of
// replicas must agree to well within StaleAfter.
//
// The rest of a run cannot be left half done: the conversation, the message and its files are
// stored in one transaction (Engine.Start), and the outcome with its retriever resources in another
// (store.FinishMessage). A conversation whose first answer was cut by a crash is not named
// afterwards: it keeps DefaultConversationName, the state it has when naming fails or
// auto_generate_name is false, and it can be renamed through the API.
//
// One goroutine per process does all of it, each pass in one transaction per batch of runs
// (store.SaveMessageProgress): the stream of a run never waits for the database, and the cost
// grows with the number of long runs, not with the tokens they stream.

// track registers a run for keepRuns until untrack.
func (e *Engine) track(r *Run) {
	e.tapRun(r)
	e.liveMu.Lock()
	e.live[r.MessageID] = r
	e.liveMu.Unlock()
}

func (e *Engine) untrack(r *Run) {
	e.liveMu.Lock()
	delete(e.live, r.MessageID)
	e.liveMu.Unlock()
}

// due is how much of period must have passed for a write to be due at a tick: ticks are a
// period apart give or take scheduling jitter, and a tick a hair early must not postpone the
// write by a whole period.
func due(period time.Duration) time.Duration { return period - period/10 }

// heartbeat is how often a run's message is written at least.
func (e *Engine) heartbeat() time.Duration { return e.staleAfter / 4 }

// keepRuns writes the progress of this process's runs and ends stale ones, until Shutdown.
func (e *Engine) keepRuns() {
	defer e.wg.Done()
	tick := time.NewTicker(min(e.interval, e.heartbeat()))
	defer tick.Stop()
	sweepEvery := e.staleAfter / 2
	nextSweep := time.Now().Add(sweepEvery)
	var p progressPass
	for {
		select {
		case <-e.life.Done():
			return
		case now := <-tick.C:
			e.saveProgress(now, &p)
			// Keep neither answers nor finished runs reachable until the next tick.
			p.reset()
			if !now.Before(nextSweep) {
				e.endStale(now)
				nextSweep = now.Add(sweepEvery)
			}
		}
	}
}

// progressPass holds the buffers of one saveProgress pass, reused from tick to tick: the rows
// written, and for each its run and the version of the answer it carries.
type progressPass struct {
	batch    []store.MessageProgress
	runs     []*Run
	versions []uint64
}

func (p *progressPass) reset() {
	clear(p.batch)
	clear(p.runs)
	p.batch, p.runs, p.versions = p.batch[:0], p.runs[:0], p.versions[:0]
}

// saveProgress writes the answer of each run that changed and whose message was last written
// at least an interval ago, and the heartbeat of each run whose message was not written for a
// heartbeat.
func (e *Engine) saveProgress(now time.Time, p *progressPass) {
	e.liveMu.Lock()
	for _, r := range e.live {
		r.mu.Lock()
		changed := r.version != r.savedVersion && now.Sub(r.answerAt) >= due(e.interval)
		answer, version := "", r.version
		if changed {
			// A copy: the run goes on appending to its builder while the write is under way.
			answer = strings.Clone(r.answer.String())
		}
		r.mu.Unlock()
		if !changed && now.Sub(r.beatAt) < due(e.heartbeat()) {
			continue
		}
		p.batch = append(p.batch, store.MessageProgress{ID: r.MessageID, Answer: answer, Changed: changed})
		p.runs = append(p.runs, r)
		p.versions = append(p.versions, version)
	}
	e.liveMu.Unlock()
	if len(p.batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(e.life, e.heartbeat())
	defer cancel()
	if err := e.store.SaveMessageProgress(ctx, now, p.batch); err != nil {
		// The next tick tries again; the runs themselves go on.
		if e.life.Err() == nil {
			e.log.Warn("save the progress of running answers", "runs", len(p.batch), "error", err)
		}
		return
	}
	for i, r := range p.runs {
		if p.batch[i].Changed {
			r.savedVersion, r.answerAt = p.versions[i], now
		}
		r.beatAt = now
	}
}

// endStale ends the runs of dead processes (see EndInterrupted).
func (e *Engine) endStale(now time.Time) {
	ctx, cancel := context.WithTimeout(e.life, e.heartbeat())
	defer cancel()
	n, err := e.store.EndStaleMessages(ctx, now.Add(-e.staleAfter), InterruptedError)
	switch {
	case err != nil && e.life.Err() == nil:
		e.log.Warn("end interrupted answers", "error", err)
	case n > 0:
		e.log.Warn("ended answers interrupted by a stopped server", "messages", n)
	}
}

// EndInterrupted ends the messages left running by a process that is gone: those whose
// heartbeat is older than StaleAfter get status error, InterruptedError and keep the answer
// stored so far. It returns how many it ended. The server calls it at start-up, before it
// listens; the same sweep then runs every StaleAfter/2.
func (e *Engine) EndInterrupted(ctx context.Context) (int64, error) {
	return e.store.EndStaleMessages(ctx, time.Now().Add(-e.staleAfter), InterruptedError)
}

// EndAllInterrupted is EndInterrupted for a server that knows no other process uses its store
// (SQLite, whose data directory one `parley serve` holds locked): every message still running
// is its predecessor's, so it ends them all at once, whatever the age of their heartbeat, with
// their workflow runs. Paused runs are left alone. It must be called before this engine starts
// any run.
func (e *Engine) EndAllInterrupted(ctx context.Context) (int64, error) {
	return e.store.EndRunningMessages(ctx, InterruptedError)
}
