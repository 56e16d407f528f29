package sequence

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

func TestDependenciesAreKnownAndAcyclic(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		steps string
		want  []Problem
	}{
		{"chain", `{"name":"a","path":"/a","data":{}},{"name":"b","path":"/b","data":{},"dependsOn":["a"]}`, nil},
		{"diamond", `{"name":"a","path":"/a","data":{}},{"name":"b","path":"/b","data":{},"dependsOn":["a"]},
			{"name":"c","path":"/c","data":{},"dependsOn":["a"]},{"name":"d","path":"/d","data":{},"dependsOn":["b","c"]}`, nil},
		{"three-cycle", `{"name":"x","path":"/x","data":{}},{"name":"a","path":"/a","data":{},"dependsOn":["c"]},
			{"name":"b","path":"/b","data":{},"dependsOn":["a"]},{"name":"c","path":"/c","data":{},"dependsOn":["b","x"]}`,
			[]Problem{{"steps", "cycle a -> c -> b -> a"}}},
		{"unknown and twice", `{"name":"a","path":"/a","data":{}},{"name":"b","path":"/b","data":{},"dependsOn":["a","lod","a"]}`,
			[]Problem{{"steps[1].dependsOn[1]", `unknown step "lod"`}, {"steps[1].dependsOn[2]", `"a" is listed twice`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r Request
			require.NoError(t, strictjson.Decode([]byte(`{"name":"n","schedule":{"every":"1h"},"steps":[`+tt.steps+`]}`), &r))
			_, err := r.Validate()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			var bad *InvalidError
			require.ErrorAs(t, err, &bad)
			require.Equal(t, tt.want, bad.Problems)
		})
	}
}
