package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTagsAreStoredAndFilterTheList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	both := b.post(`{"path":"/both","data":{},"postIn":"1h","tags":["campaign:spring","user-42"]}`)
	require.Equal(t, http.StatusCreated, both.status, string(both.body))
	require.Equal(t, []string{"campaign:spring", "user-42"}, both.hook(t).Tags)
	one := b.post(`{"path":"/one","data":{},"postIn":"1h","tags":["campaign:spring"]}`)
	require.Equal(t, http.StatusCreated, one.status, string(one.body))
	none := b.post(`{"path":"/none","data":{},"postIn":"1h","tags":[]}`)
	require.Equal(t, http.StatusCreated, none.status, string(none.body))
	require.Nil(t, none.hook(t).Tags, "an empty list is none")

	list := func(query string) []string {
		res := b.do(http.MethodGet, "/v1/hooks?"+query, nil)
		require.Equal(t, http.StatusOK, res.status, string(res.body))
		var page struct {
			Data []hookJSON `json:"data"`
		}
		require.NoError(t, json.Unmarshal(res.body, &page))
		var paths []string
		for _, h := range page.Data {
			paths = append(paths, h.Path)
		}
		return paths
	}
	require.Equal(t, []string{"/one", "/both"}, list("tag=campaign:spring"))
	require.Equal(t, []string{"/both"}, list("tag=campaign:spring&tag=user-42"))
	require.Empty(t, list("tag=other"))

	b.do(http.MethodGet, "/v1/hooks?tag=a%20b", nil).requireError(t, http.StatusBadRequest, "invalid_request", "tag")
	b.post(`{"path":"/a","data":{},"postIn":"1h","tags":["ok","no spaces"]}`).requireError(t, http.StatusBadRequest, "invalid_request", "tags[1]")
	b.post(`{"path":"/a","data":{},"postIn":"1h","tags":["x","x"]}`).requireError(t, http.StatusBadRequest, "invalid_request", "tags[1]")
	b.post(`{"path":"/a","data":{},"postIn":"1h","tags":["`+strings.Repeat(`t","`, 10)+`t"]}`).requireError(t, http.StatusBadRequest, "invalid_request", "tags")
}
