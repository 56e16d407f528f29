// Package openapiclient checks that a third party's generator reads the
// gateway's OpenAPI document as served: gen is a client oapi-codegen
// generates from /v1/openapi.json (make generate-openapi, with
// oapi-codegen.yaml beside this file, as any user of the API would), and
// its round trip drives a gateway booted in-process on a real PostgreSQL
// and NATS, every answer decoded through the generated types.
package openapiclient
