package bulk_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/bulk"
	"github.com/sundial-run/sundial/services/gateway/internal/hook"
)

func ptr[T any](v T) *T { return &v }

func ids(n int) *[]string {
	out := make([]string, n)
	for i := range out {
		out[i] = uuid.Must(uuid.NewV7()).String()
	}
	return &out
}

// validRange is a complete time-range filter; cases change one field.
func validRange() bulk.Request {
	return bulk.Request{
		StartTime: ptr("2030-01-01T00:00:00Z"),
		EndTime:   ptr("2030-01-02T00:00:00+01:00"),
		Limit:     ptr(10),
	}
}

func with(r bulk.Request, change func(*bulk.Request)) bulk.Request {
	change(&r)
	return r
}

func TestInvalidRequestsNameEachFieldAtFault(t *testing.T) {
	t.Parallel()
	id := uuid.Must(uuid.NewV7()).String()
	cases := []struct {
		name   string
		req    bulk.Request
		fields []string
	}{
		{"nothing selected", bulk.Request{}, []string{"hookIDs"}},
		{"ids and a filter field", bulk.Request{HookIDs: &[]string{id}, StartTime: ptr("2030-01-01T00:00:00Z")}, []string{"startTime"}},
		{"ids and every filter field", with(validRange(), func(r *bulk.Request) {
			r.HookIDs = &[]string{id}
			r.EndpointKey = ptr("/a")
			r.SequenceID = ptr(id)
		}), []string{"startTime", "endTime", "limit", "endpointKey", "sequenceID"}},
		{"ids and an empty endpoint key", bulk.Request{HookIDs: &[]string{id}, EndpointKey: ptr("")}, []string{"endpointKey"}},
		{"no ids", bulk.Request{HookIDs: &[]string{}}, []string{"hookIDs"}},
		{"too many ids", bulk.Request{HookIDs: ids(1001)}, []string{"hookIDs"}},
		{"an id that is no UUID", bulk.Request{HookIDs: &[]string{id, id, "nope"}}, []string{"hookIDs[2]"}},
		{"an id in braces", bulk.Request{HookIDs: &[]string{"{" + id + "}"}}, []string{"hookIDs[0]"}},
		{"an id without hyphens", bulk.Request{HookIDs: &[]string{strings.ReplaceAll(id, "-", "")}}, []string{"hookIDs[0]"}},
		{"only an endpoint key", bulk.Request{EndpointKey: ptr("/a")}, []string{"startTime", "endTime", "limit"}},
		{"only a sequence", bulk.Request{SequenceID: ptr(id)}, []string{"startTime", "endTime", "limit"}},
		{"no limit", with(validRange(), func(r *bulk.Request) { r.Limit = nil }), []string{"limit"}},
		{"no startTime", with(validRange(), func(r *bulk.Request) { r.StartTime = nil }), []string{"startTime"}},
		{"no endTime", with(validRange(), func(r *bulk.Request) { r.EndTime = nil }), []string{"endTime"}},
		{"startTime without offset", with(validRange(), func(r *bulk.Request) { r.StartTime = ptr("2030-01-01T00:00:00") }), []string{"startTime"}},
		{"startTime with a space", with(validRange(), func(r *bulk.Request) { r.StartTime = ptr("2030-01-01 00:00:00Z") }), []string{"startTime"}},
		{"endTime a date only", with(validRange(), func(r *bulk.Request) { r.EndTime = ptr("2030-01-02") }), []string{"endTime"}},
		{"empty range", with(validRange(), func(r *bulk.Request) { r.EndTime = r.StartTime }), []string{"endTime"}},
		{"reversed range", with(validRange(), func(r *bulk.Request) {
			r.StartTime, r.EndTime = ptr("2030-01-02T00:00:00Z"), ptr("2030-01-01T00:00:00Z")
		}), []string{"endTime"}},
		{"same instant in two offsets", with(validRange(), func(r *bulk.Request) {
			r.StartTime, r.EndTime = ptr("2030-01-01T01:00:00+01:00"), ptr("2030-01-01T00:00:00Z")
		}), []string{"endTime"}},
		{"limit 0", with(validRange(), func(r *bulk.Request) { r.Limit = ptr(0) }), []string{"limit"}},
		{"limit negative", with(validRange(), func(r *bulk.Request) { r.Limit = ptr(-1) }), []string{"limit"}},
		{"limit 1001", with(validRange(), func(r *bulk.Request) { r.Limit = ptr(1001) }), []string{"limit"}},
		{"empty endpoint key", with(validRange(), func(r *bulk.Request) { r.EndpointKey = ptr("") }), []string{"endpointKey"}},
		{"endpoint key not a path", with(validRange(), func(r *bulk.Request) { r.EndpointKey = ptr("orders") }), []string{"endpointKey"}},
		{"endpoint key with a space", with(validRange(), func(r *bulk.Request) { r.EndpointKey = ptr("/a b") }), []string{"endpointKey"}},
		{"endpoint key too long", with(validRange(), func(r *bulk.Request) { r.EndpointKey = ptr("/" + strings.Repeat("a", 2048)) }), []string{"endpointKey"}},
		{"sequence id not a UUID", with(validRange(), func(r *bulk.Request) { r.SequenceID = ptr("seq-1") }), []string{"sequenceID"}},
		{"empty tags", with(validRange(), func(r *bulk.Request) { r.Tags = []string{} }), []string{"tags"}},
		{"too many tags", with(validRange(), func(r *bulk.Request) { r.Tags = strings.Split("a,b,c,d,e,f,g,h,i,j,k", ",") }), []string{"tags"}},
		{"a tag no hook can have", with(validRange(), func(r *bulk.Request) { r.Tags = []string{"ok", "not ok"} }), []string{"tags[1]"}},
		{"ids and tags", bulk.Request{HookIDs: &[]string{id}, Tags: []string{"a"}}, []string{"tags"}},
		{"only tags", bulk.Request{Tags: []string{"a"}}, []string{"startTime", "endTime", "limit"}},
		{"everything wrong at once", bulk.Request{
			StartTime: ptr("yesterday"), EndTime: ptr("today"), Limit: ptr(5000), EndpointKey: ptr("x"), SequenceID: ptr("y"),
		}, []string{"startTime", "endTime", "limit", "endpointKey", "sequenceID"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.req.Validate()
			require.Equal(t, tc.fields, problemFields(t, err))
		})
	}
}

func problemFields(t *testing.T, err error) []string {
	t.Helper()
	var invalid *bulk.InvalidError
	require.ErrorAs(t, err, &invalid)
	fields := make([]string, len(invalid.Problems))
	for i, p := range invalid.Problems {
		require.NotEmpty(t, p.Message, p.Field)
		fields[i] = p.Field
	}
	return fields
}

func TestManyBadIDsAreSummarised(t *testing.T) {
	t.Parallel()
	bad := make([]string, 25)
	for i := range bad {
		bad[i] = fmt.Sprintf("bad-%d", i)
	}
	_, err := bulk.Request{HookIDs: &bad}.Validate()
	fields := problemFields(t, err)
	require.Len(t, fields, 11)
	require.Equal(t, "hookIDs[0]", fields[0])
	require.Equal(t, "hookIDs[9]", fields[9])
	require.Equal(t, "hookIDs", fields[10], "the rest in one line")
}

func TestIDsAreDeduplicatedInOrder(t *testing.T) {
	t.Parallel()
	a, b := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	sel, err := bulk.Request{HookIDs: &[]string{a.String(), b.String(), strings.ToUpper(a.String()), a.String()}}.Validate()
	require.NoError(t, err)
	require.Nil(t, sel.Range)
	require.Equal(t, []uuid.UUID{a, b}, sel.IDs)

	max := ids(bulk.MaxHookIDs)
	sel, err = bulk.Request{HookIDs: max}.Validate()
	require.NoError(t, err)
	require.Len(t, sel.IDs, bulk.MaxHookIDs, "1000 ids are allowed")
}

func TestValidRangeIsKept(t *testing.T) {
	t.Parallel()
	seq := uuid.Must(uuid.NewV7())
	req := with(validRange(), func(r *bulk.Request) {
		r.EndpointKey = ptr("/orders?x=1")
		r.SequenceID = ptr(seq.String())
		r.Limit = ptr(bulk.MaxLimit)
	})
	sel, err := req.Validate()
	require.NoError(t, err)
	require.Nil(t, sel.IDs)
	require.NotNil(t, sel.Range)
	require.True(t, sel.Range.Start.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
	require.True(t, sel.Range.End.Equal(time.Date(2030, 1, 1, 23, 0, 0, 0, time.UTC)), "the offset is honoured")
	require.Equal(t, bulk.MaxLimit, sel.Range.Limit)
	require.Equal(t, "/orders?x=1", *sel.Range.EndpointKey)
	require.Equal(t, seq, *sel.Range.SequenceID)

	sel, err = with(validRange(), func(r *bulk.Request) { r.Limit = ptr(1) }).Validate()
	require.NoError(t, err)
	require.Nil(t, sel.Range.EndpointKey)
	require.Nil(t, sel.Range.SequenceID)
	require.Equal(t, 1, sel.Range.Limit)
}

func TestRetryIDsRequestValidation(t *testing.T) {
	t.Parallel()
	mine, other := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	hook := uuid.Must(uuid.NewV7())
	one := &[]string{hook.String()}
	cases := []struct {
		name   string
		req    bulk.RetryIDsRequest
		fields []string
	}{
		{"empty", bulk.RetryIDsRequest{}, []string{"projectID", "hookIDs"}},
		{"no projectID", bulk.RetryIDsRequest{HookIDs: one}, []string{"projectID"}},
		{"projectID not a UUID", bulk.RetryIDsRequest{ProjectID: ptr("proj_1"), HookIDs: one}, []string{"projectID"}},
		{"no hookIDs", bulk.RetryIDsRequest{ProjectID: ptr(mine.String())}, []string{"hookIDs"}},
		{"empty hookIDs", bulk.RetryIDsRequest{ProjectID: ptr(mine.String()), HookIDs: &[]string{}}, []string{"hookIDs"}},
		{"too many hookIDs", bulk.RetryIDsRequest{ProjectID: ptr(mine.String()), HookIDs: ids(1001)}, []string{"hookIDs"}},
		{"bad hook id", bulk.RetryIDsRequest{ProjectID: ptr(other.String()), HookIDs: &[]string{"x"}}, []string{"hookIDs[0]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.req.Validate(mine)
			require.Equal(t, tc.fields, problemFields(t, err))
		})
	}

	_, err := bulk.RetryIDsRequest{ProjectID: ptr(other.String()), HookIDs: one}.Validate(mine)
	require.ErrorIs(t, err, bulk.ErrForbidden)
	got, err := bulk.RetryIDsRequest{ProjectID: ptr(strings.ToUpper(mine.String())), HookIDs: &[]string{hook.String(), hook.String()}}.Validate(mine)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{hook}, got)
}

func TestEditsAreCheckedAsACreatedHooksFields(t *testing.T) {
	t.Parallel()
	one := &[]string{uuid.Must(uuid.NewV7()).String()}
	cases := []struct {
		name   string
		action bulk.Action
		edit   hook.EditRequest
		fields []string
	}{
		{"an edit of nothing", bulk.ActionRetry, hook.EditRequest{}, []string{"edit"}},
		{"cancel takes no edit", bulk.ActionCancel, hook.EditRequest{Path: ptr("/a")}, []string{"edit"}},
		{"data not an object", bulk.ActionRetry, hook.EditRequest{Data: json.RawMessage(`[1]`)}, []string{"edit.data"}},
		{"data null", bulk.ActionReplay, hook.EditRequest{Data: json.RawMessage(`null`)}, []string{"edit.data"}},
		{"a path that names a host", bulk.ActionRetry, hook.EditRequest{Path: ptr("//evil.example.com/x")}, []string{"edit.path"}},
		{"a path that climbs", bulk.ActionReplay, hook.EditRequest{Path: ptr("/a/../b")}, []string{"edit.path"}},
		{"postAt without offset", bulk.ActionRetry, hook.EditRequest{PostAt: ptr("2030-01-01T00:00:00")}, []string{"edit.postAt"}},
		{"postAt out of range", bulk.ActionReplay, hook.EditRequest{PostAt: ptr("0000-06-01T00:00:00Z")}, []string{"edit.postAt"}},
		{"every field at once", bulk.ActionRetry, hook.EditRequest{
			Data: json.RawMessage(`"x"`), Path: ptr("x"), PostAt: ptr("soon"),
		}, []string{"edit.data", "edit.path", "edit.postAt"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := bulk.Request{HookIDs: one, Edit: &tc.edit}.Order(tc.action, 1024)
			require.Equal(t, tc.fields, problemFields(t, err))
		})
	}

	t.Run("with the selection's problems", func(t *testing.T) {
		t.Parallel()
		_, err := bulk.Request{Edit: &hook.EditRequest{Path: ptr("x")}}.Order(bulk.ActionRetry, 1024)
		require.Equal(t, []string{"hookIDs", "edit.path"}, problemFields(t, err))
	})
	t.Run("data over the bound", func(t *testing.T) {
		t.Parallel()
		big := json.RawMessage(`{"a":"` + strings.Repeat("x", 1024) + `"}`)
		_, err := bulk.Request{HookIDs: one, Edit: &hook.EditRequest{Data: big}}.Order(bulk.ActionReplay, 1024)
		var tooLarge *hook.TooLargeError
		require.ErrorAs(t, err, &tooLarge)
	})
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		o, err := bulk.Request{HookIDs: one, DryRun: true, Edit: &hook.EditRequest{
			Data: json.RawMessage("{ \"a\" : 1 }"), Path: ptr("/b?c=1"), PostAt: ptr("2030-01-01T01:00:00+01:00"),
		}}.Order(bulk.ActionRetry, 1024)
		require.NoError(t, err)
		require.True(t, o.DryRun)
		require.Len(t, o.IDs, 1)
		require.Equal(t, `{"a":1}`, string(o.Edit.Data), "compacted as a created hook's")
		require.Equal(t, "/b?c=1", *o.Edit.Path)
		require.True(t, o.Edit.PostAt.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
	})
}
