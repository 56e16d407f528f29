-- +goose Up

-- A bulk retry gives a failed hook a fresh retry budget without forgetting
-- its history: attempts keeps counting (attempt numbers must stay unique in
-- hook_attempts), and retry_budget_base records how many attempts were made
-- before the current budget started. The scheduler allows
-- retry_budget_base + 1 + minRetries attempts in all, and numbers the
-- retries of the budget from attempts - retry_budget_base.
--
-- Both changes are catalogue-only, so the lock they take is brief even on a
-- table of millions of hooks: a constant default adds the column without
-- rewriting the table, and the check is NOT VALID, so existing rows are not
-- scanned (they all hold 0, which satisfies it); every write is checked.
ALTER TABLE hooks
    ADD COLUMN retry_budget_base integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT hooks_retry_budget_base_check CHECK (retry_budget_base BETWEEN 0 AND attempts) NOT VALID;

-- +goose Down
ALTER TABLE hooks DROP COLUMN retry_budget_base;
