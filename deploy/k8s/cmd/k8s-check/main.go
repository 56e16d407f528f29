// Command k8s-check renders the Helm chart charts/sundial for each of its
// checked shapes, lints it and checks each rendering, the NATS chart's
// values files and docker-compose.yml, offline (package validate); with
// -out it also writes each shape's rendering to DIR/NAME.yaml. It exits 1
// on any problem, naming each.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sundial-run/sundial/deploy/k8s/validate"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	out := flag.String("out", "", "write each shape's rendering to `DIR`/NAME.yaml")
	flag.Parse()
	if err := validate.All(*root, *out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("charts/sundial, deploy/nats values and docker-compose.yml: valid")
}
