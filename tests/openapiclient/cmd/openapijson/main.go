// Command openapijson writes the OpenAPI document a gateway serves at
// /v1/openapi.json (with the default header prefix) to standard output:
// make generate-openapi generates the third-party client check's client
// (tests/openapiclient) from it.
package main

import (
	"fmt"
	"os"

	"github.com/sundial-run/sundial/services/gateway/openapi"
)

func main() {
	doc, err := openapi.JSON(openapi.DefaultHeaderPrefix)
	if err == nil {
		_, err = os.Stdout.Write(doc)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapijson:", err)
		os.Exit(1)
	}
}
