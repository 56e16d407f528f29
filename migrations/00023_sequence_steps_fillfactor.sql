-- Room on each page of sequence_run_steps for the final update of its
-- steps (docs/benchmarks.md, "Sequences"). A step is written waiting, then
-- given its hook (pending: hook_id is indexed, so that version is a new
-- index entry), then its hook's final status, in the transaction of the
-- hook's result. Only status changes then, which no index holds, so
-- PostgreSQL can write the new version on the same page without touching
-- an index (a HOT update), but only where the page has room: tightly
-- packed pages (fillfactor 100) left almost none, and every final update
-- of a burst of runs wrote both indexes again. With 30 % of each new page
-- kept free (fillfactor 70), nearly every final update is HOT, and a
-- batch of them costs a fraction of what it did. The setting applies to
-- pages written from now on; existing pages keep their layout until
-- rewritten.
--
-- sequence_runs stays packed: finishing a run changes status and
-- finished_at, which the overlap check's partial index
-- (sequence_runs_unfinished_idx) names, so that update can never be HOT.

-- +goose Up
ALTER TABLE sequence_run_steps SET (fillfactor = 70);

-- +goose Down
ALTER TABLE sequence_run_steps RESET (fillfactor);
