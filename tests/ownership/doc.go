// Package ownership keeps docs/architecture.md, "Who writes which table",
// true: its tests read the tables of migrations/, the production SQL of
// each service (services/<name>/internal/store/*.sql, not storetest) and
// the section's table, and fail when a service writes a table the section
// does not list it for, when the section lists a writer that writes no
// longer, or when a table is missing from it. They need no database.
package ownership
