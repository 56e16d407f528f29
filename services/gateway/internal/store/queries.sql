-- name: GetHook :one
SELECT * FROM hooks WHERE project_id = $1 AND id = $2;
