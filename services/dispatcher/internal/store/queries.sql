-- name: GetDeliveryCredentials :many
-- What a delivery of the project's hooks is signed and authorised with: the
-- project's Authorization header value, the secret its async ack and nack
-- URLs' tokens are made with (package asyncurl), its signature scheme
-- (pkg/signing's SignatureScheme), and its usable signing keys, the
-- active key first, then retiring keys still inside their grace period
-- (newest first), and its cap on deliveries in flight per host (NULL: none).
-- A project without usable keys gives one row with NULL key columns; no row
-- at all means the project does not exist. Each secret is sealed (package
-- secretbox).
SELECT p.authorization_header_sealed, p.async_secret_sealed,
       p.signature_scheme, p.max_concurrency, k.id AS key_id, k.secret_sealed, k.state
FROM projects AS p
LEFT JOIN signing_keys AS k
    ON k.project_id = p.id
   AND (k.state = 'active' OR (k.state = 'retiring' AND k.expires_at > now()))
WHERE p.id = sqlc.arg(project_id)
ORDER BY (k.state = 'active') DESC, k.expires_at DESC;

-- name: HeldLeases :many
-- The hooks that still hold the lease their due message gave them (pairs
-- (hook_ids[i], lease_seqs[i])): no result of that lease applied, no newer
-- lease. A dispatcher asks it of a due message delivered again, whose
-- dispatcher may have died after delivering some of its hooks: the other
-- hooks' deliveries are done. The predicate is the scheduler's
-- LockLeasedHooks' (a result of a lease is applied while it holds).
SELECT h.id
FROM hooks AS h
WHERE (h.id, h.lease_seq) IN (
        SELECT unnest(sqlc.arg(hook_ids)::uuid[]), unnest(sqlc.arg(lease_seqs)::bigint[]))
  AND h.status = 'pending'
  AND h.lease_expires_at IS NOT NULL;

-- name: LatestSigningKeySecret :one
-- The newest signing key's sealed secret: at start, the service checks
-- that its keyring opens what the database holds.
SELECT id, secret_sealed FROM signing_keys ORDER BY created_at DESC LIMIT 1;
