package sdk

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	sundial "github.com/sundial-run/sundial/sdk"
	"github.com/sundial-run/sundial/services/gateway/openapi"
)

// operations maps every operationId of the OpenAPI document to what the
// SDK offers for it: "Service.Method" on *sundial.Client, or a function of
// the package for what the API sends rather than answers (its webhooks).
// An operation added to the document without an entry here fails
// TestEveryOperationHasAnSDKMethod.
var operations = map[string]string{
	"createHook":       "Hooks.Schedule",
	"createHooks":      "Hooks.ScheduleBatch",
	"listHooks":        "Hooks.List",
	"getHook":          "Hooks.Get",
	"deleteHook":       "Hooks.Delete",
	"getHookByKey":     "Hooks.GetByKey",
	"deleteHookByKey":  "Hooks.DeleteByKey",
	"listHookAttempts": "Hooks.Attempts",
	"bulkRetry":        "Hooks.BulkRetry",
	"bulkReplay":       "Hooks.BulkReplay",
	"bulkCancel":       "Hooks.BulkCancel",
	"retryIDs":         "Hooks.RetryIDs",
	"createBulkJob":    "Hooks.CreateBulkJob",
	"listBulkJobs":     "Hooks.ListBulkJobs",
	"getBulkJob":       "Hooks.BulkJob",
	"cancelBulkJob":    "Hooks.CancelBulkJob",
	"getProject":       "Project.Get",
	"patchProject":     "Project.Update",
	"listApiKeys":      "APIKeys.List",
	"createApiKey":     "APIKeys.Create",
	"revokeApiKey":     "APIKeys.Revoke",
	"listSigningKeys":  "SigningKeys.List",
	"rotateSigningKey": "SigningKeys.Rotate",
	"revokeSigningKey": "SigningKeys.Revoke",
	"listEndpoints":    "Endpoints.List",
	"resumeEndpoint":   "Endpoints.Resume",
	// The ticket that opens a listener's WebSocket (the socket itself is
	// not an operation of the document).
	"createListenerTicket": "Project.ListenerTicket",
	"listChannels":         "Channels.List",
	"createChannel":        "Channels.Create",
	"getChannel":           "Channels.Get",
	"patchChannel":         "Channels.Update",
	"deleteChannel":        "Channels.Delete",
	"listChannelSends":     "Channels.Sends",
	"testChannel":          "Channels.Test",
	"createSequence":       "Sequences.Create",
	"listSequences":        "Sequences.List",
	"getSequence":          "Sequences.Get",
	"replaceSequence":      "Sequences.Replace",
	"deleteSequence":       "Sequences.Delete",
	"pauseSequence":        "Sequences.Pause",
	"resumeSequence":       "Sequences.Resume",
	"triggerSequence":      "Sequences.Trigger",
	"listSequenceRuns":     "Sequences.Runs",
	"previewSequence":      "Sequences.Preview",
	"previewSchedule":      "Sequences.PreviewSchedule",
	"getOrderingKey":       "OrderingKeys.Get",
	"listHeldOrderingKeys": "OrderingKeys.ListHeld",
	"resumeOrderingKey":    "OrderingKeys.Resume",
	"ackHook":              "Async.Ack",
	"nackHook":             "Async.Nack",
	// A webhook: the SDK receives it.
	"alertNotification": "ParseAlert",
}

// packageFuncs are the SDK functions the table may name (Go cannot look a
// package's functions up by name).
var packageFuncs = map[string]any{
	"ParseAlert": sundial.ParseAlert,
}

// documentOperations returns the operationIds of the document's paths and
// webhooks.
func documentOperations(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths    map[string]map[string]any `yaml:"paths"`
		Webhooks map[string]map[string]any `yaml:"webhooks"`
	}
	require.NoError(t, yaml.Unmarshal(openapi.YAML, &doc))
	var ids []string
	for _, items := range []map[string]map[string]any{doc.Paths, doc.Webhooks} {
		for _, item := range items {
			for _, op := range item {
				if m, ok := op.(map[string]any); ok {
					if id, ok := m["operationId"].(string); ok {
						ids = append(ids, id)
					}
				}
			}
		}
	}
	slices.Sort(ids)
	return ids
}

func TestEveryOperationHasAnSDKMethod(t *testing.T) {
	t.Parallel()
	ids := documentOperations(t)
	require.Len(t, ids, 51, "the document's operations (update this count with the table)")
	client := reflect.ValueOf(sundial.NewClient("k")).Elem()
	for _, id := range ids {
		name, ok := operations[id]
		if !assertTrue(t, ok, "operation %s has no SDK method: add one and an entry in operations", id) {
			continue
		}
		service, method, isMethod := strings.Cut(name, ".")
		if !isMethod {
			assertTrue(t, packageFuncs[name] != nil, "%s: no package function %s", id, name)
			continue
		}
		field := client.FieldByName(service)
		if !assertTrue(t, field.IsValid(), "%s: Client has no field %s", id, service) {
			continue
		}
		assertTrue(t, field.MethodByName(method).IsValid(), "%s: %s has no method %s", id, service, method)
	}
	for id := range operations {
		assertTrue(t, slices.Contains(ids, id), "operations names %s, which the document no longer has", id)
	}
}

func assertTrue(t *testing.T, ok bool, format string, args ...any) bool {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
	return ok
}
