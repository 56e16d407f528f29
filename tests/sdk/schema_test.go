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

// schemaTypes maps each schema of the document with properties to the SDK
// type that carries it. TestTypesMatchTheSchemas checks that their JSON
// names are the same, both ways.
var schemaTypes = map[string]any{
	"Hook":                    sundial.Hook{},
	"HookSequenceData":        sundial.HookSequenceData{},
	"RetryOverride":           sundial.RetryOverride{},
	"ScheduleHookRequest":     sundial.ScheduleHookRequest{},
	"ScheduleHooksRequest":    sundial.ScheduleHooksRequest{},
	"ListMeta":                sundial.ListMeta{},
	"HookListResponse":        sundial.HookPage{},
	"HookAttempt":             sundial.HookAttempt{},
	"HookAttemptAsync":        sundial.HookAttemptAsync{},
	"BulkActionRequest":       sundial.BulkActionRequest{},
	"BulkEdit":                sundial.HookEdit{},
	"BulkSampleHook":          sundial.BulkSampleHook{},
	"BulkJobRequest":          sundial.BulkJobRequest{},
	"BulkJob":                 sundial.BulkJob{},
	"BulkJobSelection":        sundial.BulkJobSelection{},
	"BulkJobError":            sundial.BulkJobError{},
	"BulkJobDryRun":           sundial.BulkJobDryRun{},
	"BulkJobListResponse":     sundial.BulkJobPage{},
	"RetryIDsRequest":         sundial.RetryIDsRequest{},
	"RetryPolicy":             sundial.ProjectRetryPolicy{},
	"RetryPolicyPatch":        sundial.ProjectRetryPolicyPatch{},
	"ProjectQuota":            sundial.ProjectQuota{},
	"Project":                 sundial.Project{},
	"ProjectPatch":            sundial.ProjectPatch{},
	"AlertSettings":           sundial.AlertSettings{},
	"AlertSettingsPatch":      sundial.AlertSettingsPatch{},
	"ApiKey":                  sundial.APIKey{},
	"NewApiKey":               sundial.NewAPIKey{},
	"CreateApiKeyRequest":     sundial.CreateAPIKeyRequest{},
	"SigningKey":              sundial.SigningKey{},
	"RotateSigningKeyRequest": sundial.RotateSigningKeyRequest{},
	"Endpoint":                sundial.Endpoint{},
	"ResumeEndpointRequest": struct {
		Domain string `json:"domain"`
	}{},
	"ListenerTicket":          sundial.ListenerTicket{},
	"Channel":                 sundial.Channel{},
	"ChannelEmail":            sundial.ChannelEmail{},
	"ChannelHealth":           sundial.ChannelHealth{},
	"ChannelEmailSettings":    sundial.ChannelEmailSettings{},
	"ChannelCreate":           sundial.CreateChannelRequest{},
	"ChannelPatch":            sundial.ChannelPatch{},
	"ChannelSend":             sundial.ChannelSend{},
	"ChannelTestResult":       sundial.ChannelTestResult{},
	"AlertNotification":       sundial.AlertNotification{},
	"AlertNotificationItem":   sundial.AlertNotificationItem{},
	"SequenceSchedule":        sundial.SequenceSchedule{},
	"SequenceScheduleTime":    sundial.ScheduleTime{},
	"SequenceStep":            sundial.SequenceStep{},
	"SequenceRequest":         sundial.SequenceRequest{},
	"Sequence":                sundial.Sequence{},
	"SequenceListResponse":    sundial.SequencePage{},
	"SequenceRun":             sundial.SequenceRun{},
	"SequenceRunStep":         sundial.SequenceRunStep{},
	"SequenceRunListResponse": sundial.SequenceRunPage{},
	"SequenceTrigger":         sundial.SequenceTrigger{},
	"SequencePreviewRequest":  sundial.SchedulePreviewRequest{},
	"SequencePreview":         sundial.SequencePreview{},
	"OrderingKey":             sundial.OrderingKey{},
	"OrderingKeyListResponse": sundial.OrderingKeyPage{},
	"Error":                   sundial.APIError{},
	"ErrorDetail":             sundial.ErrorDetail{},
}

// envelopes are the schemas that only wrap another ({"data": X}); the SDK
// unwraps them.
var envelopes = []string{
	"HookAttemptListResponse", "AsyncAnswerResponse", "HookResponse", "HooksResponse", "EmptyResponse",
	"BulkActionResponse", "ProjectResponse", "ApiKeyListResponse", "NewApiKeyResponse",
	"SigningKeyListResponse", "EndpointListResponse", "EndpointResponse", "ChannelResponse",
	"ChannelListResponse", "ChannelSendListResponse", "ChannelTestResponse", "ListenerTicketResponse",
	"SequenceResponse", "SequenceTriggerResponse", "SequencePreviewResponse", "OrderingKeyResponse",
	"BulkJobResponse", "BulkJobDryRunResponse",
}

// jsonNames are the JSON member names of a struct type, its embedded
// structs' included, without those tagged "-".
func jsonNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
		case f.Anonymous && tag == "":
			out = append(out, jsonNames(f.Type)...)
		case f.IsExported() && tag != "":
			out = append(out, tag)
		}
	}
	slices.Sort(out)
	return out
}

func TestTypesMatchTheSchemas(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	require.NoError(t, yaml.Unmarshal(openapi.YAML, &doc))
	for name, schema := range doc.Components.Schemas {
		if len(schema.Properties) == 0 || slices.Contains(envelopes, name) {
			continue
		}
		typ, ok := schemaTypes[name]
		if !assertTrue(t, ok, "schema %s has no SDK type: add one and an entry in schemaTypes", name) {
			continue
		}
		var want []string
		for p := range schema.Properties {
			want = append(want, p)
		}
		slices.Sort(want)
		require.Equal(t, want, jsonNames(reflect.TypeOf(typ)), "the JSON names of %T against schema %s", typ, name)
	}
	for name := range schemaTypes {
		_, ok := doc.Components.Schemas[name]
		assertTrue(t, ok, "schemaTypes names %s, which the document no longer has", name)
	}
}
