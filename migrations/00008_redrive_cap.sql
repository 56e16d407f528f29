-- +goose Up

-- A hook whose lease expires without a result is re-driven under a new
-- lease. That is what makes delivery survive a lost message or a crashed
-- dispatcher, but a hook whose delivery itself crashes every dispatcher
-- that takes it would be re-driven forever. redrives counts the consecutive
-- lease expiries of the current attempt: a claim that finds the previous
-- lease expired adds one, any other claim starts again at 0. Past the
-- scheduler's cap the attempt is recorded as failed instead of being handed
-- out again, and the hook's retry policy takes over.
--
-- Catalogue-only (a constant default), so the lock is brief on any table.
ALTER TABLE hooks ADD COLUMN redrives integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE hooks DROP COLUMN redrives;
