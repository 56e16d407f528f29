package strictjson_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sundial-run/sundial/services/gateway/internal/strictjson"
)

// fastPathSeeds are bodies on either side of each check the fast path
// makes, and of each thing that makes it give up.
var fastPathSeeds = []string{
	`{}`, ` { } `, "{}\n", `{"path":"/a","data":{},"postIn":"1m"}`,
	`{"path":"/a","data":{"k":[1,2.5,-3e2,true,false,null,"s"]},"n":7,"tags":["x","y"]}`,
	`{"inner":{"count":1,"name":"n","ratio":0.5,"on":true},"list":[{"count":2},{}]}`,
	`{"free":{"a":1,"b":{"a":2}},"any":[{"x":{"y":[]}}],"data":"text"}`,
	`{"data":{"a":1,"a":2}}`, `{"path":"/a","path":"/b"}`, `{"Path":"/a"}`, `{"unknown":1}`,
	`{"inner":{"Count":1}}`, `{"list":[{"count":1,"count":2}]}`, `{"list":{"count":1,"x":2}}`,
	`{"inner":[{"anything":1}]}`, `{"p\u0061th":"/a"}`, `{"path":"/a","p\u0061th":"/b"}`,
	`{"data":{"\u00e9":1,"é":2}}`, `{"data":"\ud83d\ude00 \" \\ \/ \b \f \n \r \t"}`,
	`{"data":"\u0000"}`, `{"data":"\ud800"}`, `{"data":"\x"}`, `{"data":"` + "\x01" + `"}`,
	`{"data":1e400}`, `{"n":1e400}`, `{"data":1e1000001}`, `{"data":0.` + strings.Repeat("1", 16384) + `}`,
	`{"data":` + strings.Repeat("9", 1001) + `}`, `{"data":-0.0e-0}`, `{"data":01}`, `{"data":-}`,
	`{"data":1.}`, `{"data":.5}`, `{"data":1e}`, `{"data":tru}`, `{"data":nul}`, `{"n":"7"}`,
	`{"path":1}`, `{"data":{}}x`, `{}{}`, `[]`, `"s"`, ``, ` `, `{`, `{"a"`, `{"data":}`,
	`{"data":[1,]}`, `{"data":{"a":1,}}`, `{,}`, `{"data" 1}`, `{"data":1 "n":2}`,
	"\xef\xbb\xbf{}", `{"data":"` + "\xff" + `"}`,
	`{"any":` + strings.Repeat("[", strictjson.MaxDepth-1) + strings.Repeat("]", strictjson.MaxDepth-1) + `}`,
	`{"any":` + strings.Repeat("[", strictjson.MaxDepth) + strings.Repeat("]", strictjson.MaxDepth) + `}`,
	`{"free":{` + strings.Repeat(`"k":1,`, 0) + `"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"a":18}}`,
	`{"free":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"r":18}}`,
}

// FuzzFastPathAgrees checks that Decode's fast path changes nothing but
// the time taken: Decode and a Decode that always walks accept and refuse
// the same bodies, with the same error and the same decoded value; and a
// body the fast path passes (valid UTF-8, as Decode checks first) is one
// the walker passes.
func FuzzFastPathAgrees(f *testing.F) {
	for _, seed := range fastPathSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast, walked fuzzTarget
		fastErr := strictjson.Decode(body, &fast)
		walkedErr := strictjson.DecodeWalking(body, &walked)
		require.Equal(t, walkedErr, fastErr, "%q", body)
		require.Equal(t, walked, fast, "%q", body)
		if utf8.Valid(body) && strictjson.WellFormed(body, &fuzzTarget{}) {
			require.NoError(t, strictjson.Walk(body, &fuzzTarget{}), "the fast path passed %q", body)
		}
	})
}

func TestTheFastPathTakesTypicalBodies(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"path":"/a","data":{},"n":60}`,
		`{"path":"/a","data":{"k":[1,2.5,-3e2,true,false,null,"s\n\u00e9"]},"n":7,"tags":["x","y"]}`,
		`{"inner":{"count":1,"name":"n","ratio":0.5,"on":true},"list":[{"count":2},{}]}`,
	} {
		require.True(t, strictjson.WellFormed([]byte(body), &fuzzTarget{}), body)
	}
	for _, body := range []string{`{"path":"/a","data":{},"postIn":"1m"}`, `{"Path":"/a"}`, `{"data":{"a":1,"a":2}}`, `{"p\u0061th":"/a"}`, `{"data":1e1000001}`} {
		require.False(t, strictjson.WellFormed([]byte(body), &fuzzTarget{}), body)
	}
}

var benchBody = []byte(`{"path":"/webhooks/orders","postIn":"1h","data":{"orderId":"A-1042","items":[{"sku":"X1","qty":2},{"sku":"Y7","qty":1}],"total":41.5,"paid":true},"retryOverride":null}`)

type benchTarget struct {
	Path          *string        `json:"path"`
	PostIn        *string        `json:"postIn"`
	Data          map[string]any `json:"data"`
	RetryOverride map[string]any `json:"retryOverride"`
}

func BenchmarkDecode(b *testing.B) {
	b.Run("fast path", func(b *testing.B) {
		for b.Loop() {
			var v benchTarget
			if err := strictjson.Decode(benchBody, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("walker", func(b *testing.B) {
		for b.Loop() {
			var v benchTarget
			if err := strictjson.DecodeWalking(benchBody, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
